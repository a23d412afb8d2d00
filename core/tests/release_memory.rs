//! `release_memory` hands the memory the allocator keeps back to the system (issue 23): after
//! a stream, memory freed under a live block (which glibc cannot trim from the top of its heap
//! by itself) is returned, and streams keep working after the call.

mod reliability_support;

use pi_agent::ai::StopReason;
use pi_mock_server::MockServer;
use reliability_support::{Api, no_retries, run};
use serde_json::json;

#[tokio::test]
async fn release_memory_returns_freed_memory_and_streams_go_on() {
    let server = MockServer::start().await.unwrap();
    server.push_all([json!({"text": "before"}), json!({"text": "after"})]);
    let model = Api::Completions.model(&server);
    let (_, message) = run(&model, &no_retries()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);

    // 8 MiB in 8 KiB blocks, freed while a later block stays alive.
    let blocks: Vec<Vec<u8>> = (0..1024).map(|_| vec![1u8; 8192]).collect();
    let guard = vec![2u8; 64];
    drop(blocks);
    let released = pi_agent::release_memory();
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert!(released, "glibc returned nothing of 8 MiB freed");
    } else {
        assert!(!released, "only glibc's allocator is trimmed");
    }
    drop(guard);

    let (_, message) = run(&model, &no_retries()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(server.requests().len(), 2);
}
