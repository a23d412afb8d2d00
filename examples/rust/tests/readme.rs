//! The README's Rust code compiles against the current API (see `build.rs`); the quick start's
//! module has the test. Nothing is run: the quick start talks to a real model.

#![allow(missing_docs, unreachable_pub)]

include!(concat!(env!("OUT_DIR"), "/readme.rs"));
