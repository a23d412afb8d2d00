//! The Rust concurrency client of the overhead benchmark (benches/overhead/run.sh builds it as
//! the example `overhead_concurrency` of `pi-agent-examples`): STREAMS `pi_agent::ai::stream`
//! calls at once on a multi-thread tokio runtime, each reading `paced-FRAMES-INTERVAL_US`.
//!
//!     overhead_concurrency PORT STREAMS FRAMES INTERVAL_US
//!
//! Prints one JSON line (see benches/overhead/concurrency_run.py for the contract).

use std::sync::Arc;

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantMessageEvent, Context, Model, StreamOptions, UserMessage,
};

/// A frame delivered later than this after the server wrote it is a stall.
const STALL_NS: i64 = 10_000_000;

/// CLOCK_MONOTONIC in nanoseconds: the server's clock.
fn mono_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
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

/// What every stream asks: shared, so each task holds a pointer, not copies.
struct Request {
    model: Model,
    context: Context,
    options: StreamOptions,
}

/// One stream: its frame count and every frame's delay (ns).
async fn one(request: Arc<Request>) -> (usize, Vec<i64>) {
    let mut stream = ai::stream(&request.model, &request.context, &request.options);
    let mut delays = Vec::new();
    let mut failed = false;
    while let Some(event) = stream.next().await {
        match &event {
            AssistantMessageEvent::TextDelta { delta, .. } => {
                let now = mono_ns();
                if let Some(sent) = delta.split(' ').next().and_then(|s| s.parse::<i64>().ok()) {
                    delays.push(now - sent);
                }
            }
            AssistantMessageEvent::Error { .. } => failed = true,
            _ => {}
        }
    }
    if failed {
        eprintln!(
            "overhead_concurrency: a stream failed: {:?}",
            stream.final_message().and_then(|m| m.error_message.clone())
        );
    }
    (delays.len(), delays)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: overhead_concurrency PORT STREAMS FRAMES INTERVAL_US");
        std::process::exit(2);
    }
    let streams: usize = args[2].parse().unwrap_or(1000);
    let base = format!("http://127.0.0.1:{}/v1", args[1]);
    let model = Model::new(
        "openai-completions",
        "openai",
        format!("paced-{}-{}", args[3], args[4]),
        base.clone(),
    );
    let warm = Model::new("openai-completions", "openai", "paced-1-0", base);
    let context = Context {
        messages: vec![UserMessage::text("go").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // One stream first: the one-time set-up (HTTP client, runtime) is not a stream's cost.
    let warm = Arc::new(Request {
        model: warm,
        context: context.clone(),
        options: options.clone(),
    });
    runtime.block_on(one(warm));
    let request = Arc::new(Request {
        model,
        context,
        options,
    });
    let idle = status_kb("VmRSS:");
    let start = mono_ns();
    // RSS halfway through the streams (every one open, none finished): the steady state.
    let half = std::time::Duration::from_micros(
        args[3].parse::<u64>().unwrap_or(0) * args[4].parse::<u64>().unwrap_or(0) / 2,
    );
    let mid = std::thread::spawn(move || {
        std::thread::sleep(half);
        status_kb("VmRSS:")
    });
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..streams)
            .map(|_| tokio::spawn(one(Arc::clone(&request))))
            .collect();
        futures::future::join_all(tasks).await
    });
    let wall = (mono_ns() - start) as f64 / 1e9;
    let mut delays: Vec<i64> = Vec::new();
    let mut frames = 0;
    for (count, d) in results.into_iter().flatten() {
        frames += count;
        delays.extend(d);
    }
    let peak = status_kb("VmHWM:");
    let mid = mid.join().unwrap_or(-1);
    // Give the pool's idle timers a moment, as a long-running host would.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = status_kb("VmRSS:");
    let released = pi_agent::release_memory();
    let after_release = status_kb("VmRSS:");
    let _ = released;
    delays.sort_unstable();
    let late = delays.iter().filter(|&&d| d > STALL_NS).count();
    let pct = |p: f64| {
        delays
            .get(((delays.len().saturating_sub(1)) as f64 * p) as usize)
            .copied()
            .unwrap_or(0)
    };
    println!(
        "{{\"streams\":{streams},\"frames\":{frames},\"wall_s\":{wall:.3},\"late_frames\":{late},\
         \"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_late_ms\":{:.1},\"rss_idle_kb\":{idle},\
         \"rss_mid_kb\":{mid},\"rss_peak_kb\":{peak},\"kib_per_stream\":{:.1},\"rss_after_kb\":{after},\
         \"rss_released_kb\":{after_release}}}",
        pct(0.5) as f64 / 1e6,
        pct(0.99) as f64 / 1e6,
        delays.last().copied().unwrap_or(0) as f64 / 1e6,
        (peak - idle) as f64 / streams as f64,
    );
}
