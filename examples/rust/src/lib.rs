//! Runnable examples live in `examples/rust/*.rs`; run one with `cargo run --example agent`.
