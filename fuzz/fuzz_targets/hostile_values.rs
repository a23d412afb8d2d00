//! Hostile values (issue 17): arbitrary text as a model id, project and location in the URLs
//! providers build, and as settings, options and faux-options JSON read strictly.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| pi_agent::fuzzing::hostile_values(data));
