//! The `openai-responses` response decoder, fed arbitrary bytes as a response body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::provider_stream(
    "openai-responses",
    data
));
