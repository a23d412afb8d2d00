//! # pi-agent
//!
//! One streaming API over many LLM wire protocols ([`ai`]), and a tool-using agent on top of it
//! ([`agent`]). A Rust port of pi's `@mariozechner/pi-ai` and `@mariozechner/pi-agent-core`
//! (v0.73.1), with the same JSON shapes for messages and events.
//!
//! ```no_run
//! use std::sync::Arc;
//! use pi_agent::agent::{Agent, AgentOptions, AgentToolResult, FnTool};
//! use pi_agent::ai::Model;
//!
//! # async fn demo() -> Result<(), pi_agent::agent::AgentError> {
//! let model = Model::new("openai-completions", "openai", "gpt-4o-mini", "https://api.openai.com/v1");
//! let clock = FnTool::new("clock", "Current Unix time", serde_json::json!({"type": "object"}),
//!     |_call| async { Ok(AgentToolResult::text("1700000000")) });
//! let agent = Agent::new(AgentOptions {
//!     system_prompt: "You are helpful.".into(),
//!     model: Some(model),
//!     tools: vec![Arc::new(clock)],
//!     ..AgentOptions::default()
//! });
//! agent.subscribe(|event| println!("{}", event.kind()));
//! agent.prompt("What time is it?").await?;
//! println!("{:#?}", agent.messages().last());
//! # Ok(())
//! # }
//! ```
//!
//! Everything async runs on tokio: call [`ai::stream`] and [`agent::Agent::prompt`] from inside
//! a tokio runtime.

// The shared provider plumbing (the HTTP driver, options mapping, environment keys, gateways)
// serves every provider family; with some families left out (cargo features) parts of it are
// unused, which is expected. The full build (default features, `clippy -D warnings`) still
// catches dead code.
#![cfg_attr(
    not(all(
        feature = "openai",
        feature = "anthropic",
        feature = "google",
        feature = "mistral",
        feature = "bedrock"
    )),
    allow(dead_code, unused_imports)
)]

pub mod agent;
pub mod ai;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "mcp")]
pub mod mcp;
mod memory;
pub mod observability;
mod off_worker;
mod panics;
pub mod session;
#[cfg(test)]
mod test_rng;
mod text;

/// The `reqwest` this crate is built with, for [`ai::set_http_client`].
pub use reqwest;

pub use agent::{
    Agent, AgentEvent, AgentMessage, AgentOptions, AgentTool, AgentToolResult, FnTool,
};
pub use ai::{
    AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Context, Message, Model,
    StopReason, StreamOptions, complete, stream,
};

pub use memory::release_memory;
pub use off_worker::off_worker;

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Rust blocks of the repository's README, compiled as doctests so the quick start cannot
/// rot (`no_run`: they call real providers).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
