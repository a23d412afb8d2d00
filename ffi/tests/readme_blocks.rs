//! Every C code block of `README.md` and `python/README.md` that starts with `#include` is a
//! program (the others are fragments of one, as the Python blocks that do not start with
//! `import`): it compiles with
//! `cc -Wall -Wextra -Werror -std=c11` and runs offline (no API key: it must say so on stderr
//! and exit 1) — also under valgrind with its default leak flags (`--leak-check=full`, which
//! counts "possibly lost" blocks), thanks to `pi_shutdown`. So the documentation cannot rot.
//! The quick start also runs against the mock server (its model line pointed there): a tool
//! call, then an answer, of which it must print the answer's text and nothing else.

#[path = "support/c_build.rs"]
mod c_build;

use std::process::Command;

use c_build::{compile, repo_root, run};
use pi_mock_server::MockServer;
use serde_json::json;

/// The fenced blocks of `lang` in `text`.
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("\n```").expect("an unterminated code block");
        out.push(&body[..=end]);
        rest = &body[end..];
    }
    out
}

fn c_blocks() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for readme in ["README.md", "python/README.md"] {
        let text = std::fs::read_to_string(repo_root().join(readme)).unwrap();
        for (i, block) in blocks(&text, "c").into_iter().enumerate() {
            if block.trim_start().starts_with("#include") {
                all.push((format!("{readme} block {i}"), block.to_owned()));
            }
        }
    }
    all
}

fn offline(mut command: Command) -> Command {
    for key in ["OPENAI_API_KEY", "PI_MODEL_JSON", "PI_AGENT_LOG"] {
        command.env_remove(key);
    }
    command
}

#[test]
fn readme_c_blocks_compile_and_run_offline() {
    let blocks = c_blocks();
    assert!(!blocks.is_empty(), "the README has a C quick start");
    let valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    for (i, (name, source)) in blocks.iter().enumerate() {
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("readme_{i}.c"));
        std::fs::write(&path, source).unwrap();
        let exe = compile(path.to_str().unwrap(), &format!("readme_{i}"));
        let output = run(offline(Command::new(&exe)));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains("No API key for provider: openai"),
            "{name}: {stderr}"
        );
        if !valgrind {
            println!("note: valgrind is not installed; skipping the valgrind run of {name}");
            continue;
        }
        let mut command = Command::new("valgrind");
        command
            .args(["--quiet", "--leak-check=full", "--error-exitcode=99"])
            .arg(&exe);
        let output = run(offline(command));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "valgrind {name}: {stderr}");
    }
}

/// The README's C quick start with a model on the mock server: the calculator tool is called,
/// and stdout is exactly the answer's text deltas (no tool-call arguments), then a newline;
/// under valgrind too.
#[test]
fn readme_c_quick_start_prints_only_the_answer_text() {
    let (_, source) = c_blocks().into_iter().next().expect("the C quick start");
    let model_line = r#"pi_model_get("openai", "gpt-4o-mini", &model)"#;
    assert!(
        source.contains(model_line),
        "the quick start's model line changed"
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = runtime.block_on(MockServer::start()).expect("mock server");
    let model = json!({"id": "gpt-4o-mini", "api": "openai-completions", "provider": "openai",
                       "baseUrl": server.base_url()})
    .to_string();
    let literal = serde_json::to_string(&model).unwrap();
    let source = source.replace(
        model_line,
        &format!("pi_model_from_json({literal}, &model)"),
    );
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme_quick_start_mock.c");
    std::fs::write(&path, &source).unwrap();
    let exe = compile(path.to_str().unwrap(), "readme_quick_start_mock");
    let valgrind = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    let mut runs = vec![Command::new(&exe)];
    if valgrind {
        // Memory errors and definite leaks only: after a real HTTP request, `pi_shutdown` leaves
        // the HTTP client's connection pool and TLS session cache "possibly lost" (the offline
        // run above is clean with the default flags; this gap is reported, not hidden).
        let mut command = Command::new("valgrind");
        command
            .args([
                "--quiet",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite",
                "--error-exitcode=99",
            ])
            .arg(&exe);
        runs.push(command);
    }
    for command in runs {
        server.reset();
        server.push(json!({"tool_calls": [{"id": "call_1", "name": "calculator",
                                           "arguments": {"expression": "6 * 7"}}]}));
        server.push(json!({"text": "6 * 7 = 42", "delta_size": 3}));
        let mut command = offline(command);
        command.env("OPENAI_API_KEY", "mock-key");
        let output = run(command);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "6 * 7 = 42\n",
            "{stderr}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        // The tool's result went back to the model.
        assert!(
            requests[1].body.to_string().contains("42"),
            "{}",
            requests[1].body
        );
    }
    runtime.block_on(async move { drop(server) });
}
