//! Durable sessions: an agent whose journal survives the process.
//!
//! A [`Session`] drives the agent's stepper ([`AgentStepper`](crate::agent::AgentStepper))
//! and writes everything to a [`SessionStore`] before anyone sees it:
//!
//! - every event (deltas included) is a [`JournalRecord`] `{"seq", "attempt", "event"}`;
//!   [`Session::subscribe`] hands them out from any cursor, then live, and
//!   [`Subscription::follow`] does the same for another process reading the same store;
//! - requests (prompt, steer, follow-up) carry an id and are applied once;
//! - a tool call's intent (`tool_execution_start`) is written before the tool runs, its
//!   outcome (`tool_execution_end`) after;
//! - each step's input is written before the stepper takes it, so reopening replays the
//!   journal to the exact state and resumes: finished steps are not redone, a model call in
//!   flight is made again (the next `attempt`), a tool in flight is re-run only when
//!   replay-safe and otherwise ends [`TOOL_INTERRUPTED`].
//!
//! Stores: [`SqliteStore`] (the default: one file, WAL mode, many sessions) and
//! [`MemoryStore`] (tests). Compaction ([`CompactionSettings`]) summarises older turns when
//! the context nears the model's window.
//!
//! ```no_run
//! use std::sync::Arc;
//! use pi_agent::ai::{Model, UserMessage};
//! use pi_agent::session::{Session, SessionOptions, SqliteStore};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Arc::new(SqliteStore::open("sessions.db")?);
//! let model = Model::new("openai-completions", "openai", "gpt-4o-mini", "https://api.openai.com/v1");
//! let session = Session::open(store, "chat-1", SessionOptions::new(model)).await?;
//! session.prompt("request-1", UserMessage::text("Hello"))?;
//! let mut records = session.subscribe(0);
//! while let Some(record) = records.next().await {
//!     println!("{}", record?.to_json());
//! #   break;
//! }
//! # Ok(())
//! # }
//! ```

mod compaction;
mod control;
mod driver;
mod error;
mod handle;
mod memory;
mod options;
mod receipt;
mod record;
mod replay;
mod sqlite;
mod state;
mod store;
mod subscribe;

pub use self::compaction::{Compaction, CompactionSettings, SUMMARY_PREFIX};
pub use self::driver::TOOL_INTERRUPTED;
pub use self::error::SessionError;
pub use self::handle::Session;
pub use self::memory::MemoryStore;
pub use self::options::SessionOptions;
pub use self::receipt::{Receipt, RequestKind};
pub use self::record::{Batch, Heads, JournalRecord, StoredControl, StoredRecord};
pub use self::sqlite::SqliteStore;
pub use self::state::SessionStatus;
pub use self::store::{Claim, SessionStore, StoreError};
pub use self::subscribe::{FOLLOW_POLL_INTERVAL, Subscription};
