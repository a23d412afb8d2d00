//! Every C code block of `README.md` and `python/README.md` that starts with `#include` is a
//! program (the others are fragments of one, as the Python blocks that do not start with
//! `import`): it compiles with
//! `cc -Wall -Wextra -Werror -std=c11` and runs offline (no API key: it must say so on stderr
//! and exit 1) — also under valgrind with its default leak flags (`--leak-check=full`, which
//! counts "possibly lost" blocks), thanks to `pi_shutdown`. So the documentation cannot rot.

#[path = "support/c_build.rs"]
mod c_build;

use std::process::Command;

use c_build::{compile, repo_root, run};

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
