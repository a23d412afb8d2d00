//! `pi-mock-server [--port P] [--script FILE] [--no-stdin]`
//!
//! Starts the scripted mock server on 127.0.0.1, prints exactly one line
//! `{"url":"http://127.0.0.1:PORT/v1","port":PORT}` to stdout, then serves
//! until stdin reaches EOF (or, with `--no-stdin`, forever) or the process is
//! killed (SIGTERM/SIGINT keep their default, terminating, disposition).
//! `--script FILE` preloads a JSON array of replies (or a single reply).

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use pi_mock_server::{MockServer, validate_reply};
use serde_json::Value;

const USAGE: &str = "usage: pi-mock-server [--port P] [--script FILE] [--no-stdin]";

struct Args {
    port: u16,
    script: Option<String>,
    watch_stdin: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        script: None,
        watch_stdin: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "--port" => {
                let v = value("--port")?;
                args.port = v.parse().map_err(|_| format!("bad port {v:?}"))?;
            }
            "--script" => args.script = Some(value("--script")?),
            "--no-stdin" => args.watch_stdin = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

fn load_script(path: &str) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let replies = match serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))? {
        Value::Array(items) => items,
        obj @ Value::Object(_) => vec![obj],
        _ => return Err(format!("{path}: expected a JSON array of replies")),
    };
    for (i, reply) in replies.iter().enumerate() {
        validate_reply(reply).map_err(|e| format!("{path}: reply #{i}: {e}"))?;
    }
    Ok(replies)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pi-mock-server: {e}");
            return ExitCode::from(2);
        }
    };
    let replies = match args.script.as_deref().map(load_script).transpose() {
        Ok(r) => r.unwrap_or_default(),
        Err(e) => {
            eprintln!("pi-mock-server: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match MockServer::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port))).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pi-mock-server: cannot bind 127.0.0.1:{}: {e}", args.port);
            return ExitCode::FAILURE;
        }
    };
    server.push_all(replies);

    let port = server.addr().port();
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, r#"{{"url":"{}","port":{port}}}"#, server.base_url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    drop(stdout);

    if args.watch_stdin {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            // Returns on EOF (or a read error: nobody can talk to us then).
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = tx.send(());
        });
        let _ = rx.await;
    } else {
        std::future::pending::<()>().await;
    }
    drop(server);
    ExitCode::SUCCESS
}
