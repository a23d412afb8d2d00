//! Issue 9, bounded buffers, measured: with default options a 1 GB SSE line and a 200 MB error
//! body cost a few megabytes, not gigabytes. One test in its own binary, so the process's peak
//! resident size (`VmHWM`, Linux) is this test's alone.

mod reliability_support;

use pi_agent::ai::StopReason;
use pi_agent::ai::{DEFAULT_MAX_ERROR_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES};
use pi_mock_server::MockServer;
use reliability_support::{Api, no_retries, run};
use serde_json::json;

/// Peak resident set size in bytes, where the platform reports it.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test]
async fn a_gigabyte_line_and_a_huge_error_body_cost_megabytes() {
    let before = peak_rss();
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": ["data: ", {"repeat": "x", "bytes": 1u64 << 30}]}));
    server.push(
        json!({"status": 500, "sse": [{"repeat": "y", "bytes": 200_000_000}],
                       "headers": {"content-type": "application/json"}}),
    );

    let (_, message) = run(&Api::Completions.model(&server), &no_retries()).await;
    let error = message.error_message.unwrap_or_default();
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        error.contains(&format!("{DEFAULT_MAX_EVENT_BYTES} bytes")),
        "{error}"
    );

    let (_, message) = run(&Api::Completions.model(&server), &no_retries()).await;
    let error = message.error_message.unwrap_or_default();
    assert!(error.starts_with("500 yyy"), "{error:.60}");
    assert!(
        error.contains(&format!("{DEFAULT_MAX_ERROR_BODY_BYTES} bytes")),
        "{error:.60}"
    );

    if let (Some(before), Some(after)) = (before, peak_rss()) {
        let grown = after.saturating_sub(before);
        println!("peak RSS grew by {} MiB", grown >> 20);
        // The event limit is a few MiB; buffers double as they grow; the test harness, the
        // runtime and the mock server add a little. Unbounded, this was over 2 GB.
        assert!(
            grown < 8 * DEFAULT_MAX_EVENT_BYTES,
            "peak RSS grew by {} MiB",
            grown >> 20
        );
    }
}
