//! What the loop and the tool calls share: the [`EventSink`] a run's events go to, and
//! [`guarded`], which runs a hook or tool future cut short by an abort, a watchdog or a panic.

use std::future::Future;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::event::AgentEvent;
use crate::panics::panic_text;

/// Where a run's events go. The loop awaits every event before it goes on (pi's barrier
/// semantics: when `before_tool_call` runs, every subscriber has seen the assistant message).
///
/// Any `FnMut(AgentEvent) + Send` closure is a sink.
pub trait EventSink: Send {
    /// Delivers one event.
    fn emit(&mut self, event: AgentEvent) -> impl Future<Output = ()> + Send;
}

impl<F: FnMut(AgentEvent) + Send> EventSink for F {
    fn emit(&mut self, event: AgentEvent) -> impl Future<Output = ()> + Send {
        self(event);
        std::future::ready(())
    }
}

/// How a guarded hook future ended.
pub(crate) enum Guarded<T> {
    /// It answered.
    Done(T),
    /// It panicked (the text).
    Panicked(String),
    /// The run was aborted first.
    Aborted,
    /// The watchdog fired first.
    TimedOut(Duration),
}

/// Runs a hook future, catching panics, cut short by `signal` and by `timeout`. A hook that
/// blocks its thread cannot be pre-empted here; bindings run host callbacks off the runtime's
/// threads for that reason.
pub(crate) async fn guarded<T>(
    future: impl Future<Output = T>,
    signal: &CancellationToken,
    timeout: Option<Duration>,
) -> Guarded<T> {
    let deadline = async {
        match timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        () = signal.cancelled() => Guarded::Aborted,
        outcome = std::panic::AssertUnwindSafe(future).catch_unwind() => match outcome {
            Ok(value) => Guarded::Done(value),
            Err(panic) => Guarded::Panicked(panic_text(&*panic)),
        },
        () = deadline => Guarded::TimedOut(timeout.unwrap_or_default()),
    }
}
