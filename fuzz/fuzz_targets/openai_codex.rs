//! The `openai-codex-responses` SSE decoder (Codex's event mapping on top of the Responses
//! one), fed arbitrary bytes as a response body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::provider_stream(
    "openai-codex-responses",
    data
));
