//! Memory of many concurrent streams: N openai-completions streams are opened at once against
//! a minimal SSE server in a child process (so only the client's memory is measured), held
//! open until all have started, then finished. Prints the client's resident memory before,
//! at the peak (per stream) and after the streams ended, for three rounds (later rounds show the
//! memory of the first is reused, not leaked), then after `malloc_trim`.
//!
//! Run: `cargo bench -p pi-agent --bench concurrent_streams` (N = `PI_STREAMS`, default
//! 10,000; needs that many file descriptors). Linux only (reads `/proc/self/status`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use pi_agent::ai::{self, ApiKey, Context, Model, StreamOptions, UserMessage};

/// The child: accepts connections, answers each with the SSE head and one text chunk, waits
/// for a byte on stdin, then ends every stream.
fn serve() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!("{}", listener.local_addr().expect("addr").port());
    std::io::stdout().flush().ok();
    let open = Arc::new(std::sync::Mutex::new(Vec::<TcpStream>::new()));
    let accepted = Arc::clone(&open);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let accepted = Arc::clone(&accepted);
            // Small stacks: the server holds one thread per open stream.
            let spawned = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let chunk = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n";
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{chunk}",
                    chunk.len() + END.len()
                );
                if stream.write_all(head.as_bytes()).is_ok() {
                    accepted.lock().expect("lock").push(stream);
                }
            });
            drop(spawned);
        }
    });
    // Each byte on stdin ends every stream open so far; end of input ends the server.
    let mut byte = [0u8; 1];
    while std::io::stdin().read(&mut byte).unwrap_or(0) == 1 {
        for mut stream in open.lock().expect("lock").drain(..) {
            let _ = stream.write_all(END.as_bytes());
        }
    }
}

const END: &str = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// `VmRSS` / `VmHWM` of this process, in KiB.
fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    if std::env::args().any(|arg| arg == "--serve") {
        return serve();
    }
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let streams: usize = std::env::var("PI_STREAMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("server child");
    let mut port = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("port");
    let port: u16 = port.trim().parse().expect("port number");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let model = Model::new(
        "openai-completions",
        "openai",
        "bench",
        format!("http://127.0.0.1:{port}/v1"),
    );
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let before = memory("VmRSS:");
    let mut release = child.stdin.take().expect("stdin");
    for round in 1..=3 {
        let (peak, after) = round_of(&runtime, streams, &model, &context, &options, &mut release);
        println!(
            "concurrent_streams round {round}: {streams} streams: RSS before {before} KiB, peak \
             {peak} KiB ({:.1} KiB/stream), after {after} KiB",
            (peak.saturating_sub(before)) as f64 / streams as f64,
        );
    }
    // What the process holds is free memory the allocator keeps for reuse (round 2 needs no
    // more than round 1); glibc gives it back to the system when asked.
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim has no preconditions.
    unsafe { malloc_trim(0) };
    println!(
        "concurrent_streams: after malloc_trim {} KiB",
        memory("VmRSS:")
    );
    drop(release);
    let _ = child.wait();
}

/// Opens `streams` streams, waits until each has its first text, releases them and waits for
/// them to end; returns RSS at the peak and two seconds after.
fn round_of(
    runtime: &tokio::runtime::Runtime,
    streams: usize,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    release: &mut impl Write,
) -> (u64, u64) {
    let started = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..streams)
        .map(|_| {
            let mut stream = runtime.block_on(async { ai::stream(model, context, options) });
            let started = Arc::clone(&started);
            runtime.spawn(async move {
                let mut first = true;
                while let Some(event) = stream.next().await {
                    if first && event.kind() == "text_delta" {
                        first = false;
                        started.fetch_add(1, Ordering::SeqCst);
                    }
                }
                stream.final_message().map(|m| m.stop_reason)
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < streams {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let peak = memory("VmRSS:");
    release.write_all(b"x").expect("release");
    release.flush().expect("release");
    let done = runtime.block_on(futures::future::join_all(handles));
    let ok = done
        .iter()
        .filter(|result| matches!(result, Ok(Some(reason)) if !reason.is_failure()))
        .count();
    assert_eq!(ok, streams, "every stream ends with done");
    // Give the pool's idle timers a moment, as a long-running host would.
    std::thread::sleep(std::time::Duration::from_secs(2));
    (peak, memory("VmRSS:"))
}
