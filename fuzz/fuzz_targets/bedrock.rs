//! The `bedrock-converse-stream` response decoder (binary AWS eventstream frames, then the
//! ConverseStream events), fed arbitrary bytes as a response body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::provider_stream(
    "bedrock-converse-stream",
    data
));
