//! The streaming partial-JSON parser of tool-call arguments.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::partial_json(data));
