//! The Rust client of the overhead benchmark (benches/overhead/run.sh builds it as the example
//! `overhead_client` of `pi-agent-examples`): `pi_agent::ai::stream` on a multi-thread tokio
//! runtime, each `TextDelta` read as a user would. With `PI_OVERHEAD_CURRENT_THREAD` set it
//! runs on a current-thread runtime instead, so the stream's task and its reader share one
//! thread: the difference is what the hand-off between two threads costs per frame. With
//! `PI_OVERHEAD_BLOCKING` set the main thread reads each stream with `blocking_next` (outside
//! the runtime, which keeps its workers), as C's `pi_stream_next` and Python's `for` do. With
//! `PI_OVERHEAD_SPAWNED` set the streams are awaited in a task spawned on the multi-thread
//! runtime, not in `block_on`: the worker that reads the socket runs the reader too.
//!
//!     overhead_client PORT ROUNDS FRAMES INTERVAL_US BURST
//!
//! Prints one JSON line (see benches/overhead/run.py for the contract).

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantMessageEvent, Context, Model, StreamOptions, UserMessage,
};

/// CLOCK_MONOTONIC in nanoseconds: the server's clock (std's `Instant` hides its origin).
fn mono_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// User + system CPU seconds of this process.
fn cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage only writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// A `VmRSS:` / `VmHWM:` figure of this process, KiB.
fn status_kb(field: &str) -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(-1)
}

/// One request; records the first text delta's time and, with `lat`, every frame's delay.
async fn request(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    first: &mut i64,
    mut lat: Option<&mut Vec<i64>>,
) -> usize {
    let mut stream = ai::stream(model, context, options);
    let mut frames = 0;
    while let Some(event) = stream.next().await {
        if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
            let now = mono_ns();
            if frames == 0 {
                *first = now;
            }
            frames += 1;
            if let Some(lat) = lat.as_deref_mut()
                && let Some(sent) = delta.split(' ').next().and_then(|s| s.parse::<i64>().ok())
            {
                lat.push(now - sent);
            }
        }
    }
    frames
}

/// [`request`] read with `blocking_next` on the calling thread (the stream made on `runtime`).
fn request_blocking(
    runtime: &tokio::runtime::Runtime,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    first: &mut i64,
    mut lat: Option<&mut Vec<i64>>,
) -> usize {
    let mut stream = {
        let _runtime = runtime.enter();
        ai::stream(model, context, options)
    };
    let mut frames = 0;
    while let Some(event) = stream.blocking_next() {
        if let AssistantMessageEvent::TextDelta { delta, .. } = &event {
            let now = mono_ns();
            if frames == 0 {
                *first = now;
            }
            frames += 1;
            if let Some(lat) = lat.as_deref_mut()
                && let Some(sent) = delta.split(' ').next().and_then(|s| s.parse::<i64>().ok())
            {
                lat.push(now - sent);
            }
        }
    }
    frames
}

fn join(values: &[i64]) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!("usage: overhead_client PORT ROUNDS FRAMES INTERVAL_US BURST");
        std::process::exit(2);
    }
    let (port, rounds, burst) = (&args[1], args[2].parse().unwrap_or(0), &args[5]);
    let base = format!("http://127.0.0.1:{port}/v1");
    let paced = Model::new(
        "openai-completions",
        "openai",
        format!("paced-{}-{}", args[3], args[4]),
        base.clone(),
    );
    let bursty = Model::new(
        "openai-completions",
        "openai",
        format!("burst-{burst}"),
        base,
    );
    let context = Context {
        messages: vec![UserMessage::text("go").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let idle = status_kb("VmRSS:");
    let mut builder = if std::env::var_os("PI_OVERHEAD_CURRENT_THREAD").is_some() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = builder.enable_all().build().expect("a tokio runtime");
    let blocking = std::env::var_os("PI_OVERHEAD_BLOCKING").is_some();
    let (ttfe, lat, cpu, got) = if blocking {
        let (mut ttfe, mut lat) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (start, mut first) = (mono_ns(), 0);
            request_blocking(
                &runtime,
                &paced,
                &context,
                &options,
                &mut first,
                Some(&mut lat),
            );
            ttfe.push(first - start);
        }
        let before = cpu_seconds();
        let got = request_blocking(&runtime, &bursty, &context, &options, &mut 0, None);
        (ttfe, lat, cpu_seconds() - before, got)
    } else {
        let run = async move {
            let (mut ttfe, mut lat) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let (start, mut first) = (mono_ns(), 0);
                request(&paced, &context, &options, &mut first, Some(&mut lat)).await;
                ttfe.push(first - start);
            }
            let before = cpu_seconds();
            let got = request(&bursty, &context, &options, &mut 0, None).await;
            (ttfe, lat, cpu_seconds() - before, got)
        };
        if std::env::var_os("PI_OVERHEAD_SPAWNED").is_some() {
            runtime
                .block_on(runtime.spawn(run))
                .expect("the reading task")
        } else {
            runtime.block_on(run)
        }
    };
    if got.to_string() != *burst {
        eprintln!("overhead_client: {got} of {burst} burst frames");
    }
    println!(
        "{{\"ttfe_ns\":[{}],\"lat_ns\":[{}],\"cpu_s\":{cpu:.6},\"burst\":{burst},\
         \"rss_idle_kb\":{idle},\"rss_peak_kb\":{},\"rss_after_kb\":{}}}",
        join(&ttfe),
        join(&lat),
        status_kb("VmHWM:"),
        status_kb("VmRSS:"),
    );
}
