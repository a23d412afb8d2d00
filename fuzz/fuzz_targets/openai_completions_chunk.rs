//! The Chat Completions chunk cursor, against serde's reading of the same chunk.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::openai_completions_chunk(data));
