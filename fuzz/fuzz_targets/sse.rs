//! The SSE decoder: any bytes, any chunking, with and without an event limit.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::sse(data));
