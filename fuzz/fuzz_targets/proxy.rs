//! The agent proxy protocol (`pi_agent::agent::stream_proxy`), fed arbitrary bytes as a response body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::provider_stream("proxy", data));
