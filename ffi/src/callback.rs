//! Where C callbacks run. Callbacks the core awaits (tools, `before_tool_call`, ...) run on the
//! runtime's blocking pool ([`run_callback`]), so that an abort or a watchdog can stop waiting
//! for one that blocks. Callbacks the core calls synchronously (`prepare_arguments`,
//! `convert_to_llm`, `stream_fn`, `on_payload`, ...) run on the calling thread, moved out of the
//! runtime's worker pool for their duration ([`run_inline`]) so that the other tasks keep
//! running. Both count the callback in its agent's [`CallsInFlight`] and mark the thread with
//! its [`Scope`].

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::runtime::{Scope, ScopeGuard};

/// Counts the tool and hook callbacks of one agent that are running, so that `pi_agent_free`
/// can wait for them before it frees their `user_data`.
#[derive(Debug, Default)]
pub(crate) struct CallsInFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

impl CallsInFlight {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.count.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until no callback runs.
    pub(crate) fn wait_until_idle(&self) {
        let mut count = self.lock();
        while *count > 0 {
            count = self
                .idle
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One running callback; decrements the count when dropped.
struct InFlight(Option<Arc<CallsInFlight>>);

impl InFlight {
    fn enter(calls: Option<&Arc<CallsInFlight>>) -> Self {
        if let Some(calls) = calls {
            *calls.lock() += 1;
        }
        Self(calls.cloned())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(calls) = &self.0 {
            let mut count = calls.lock();
            *count -= 1;
            if *count == 0 {
                calls.idle.notify_all();
            }
        }
    }
}

/// Who a callback belongs to: the agent's count of running callbacks and its scope key (see
/// [`Scope::Callback`]); streams and OAuth logins have no agent (`calls` is `None`, key 0).
#[derive(Clone, Default)]
pub(crate) struct CallbackSite {
    pub(crate) calls: Option<Arc<CallsInFlight>>,
    pub(crate) agent_key: usize,
}

/// Runs `invoke` (which calls C) on the runtime's blocking pool, counted and scoped. Everything
/// `invoke` holds (the registration's `user_data` among it) is dropped before the count goes
/// down. `Err` when the task failed (a panic in `invoke`, or a runtime shutting down). Dropping
/// the returned future stops waiting; the callback itself runs to its end.
pub(crate) async fn run_callback<T: Send + 'static>(
    site: &CallbackSite,
    invoke: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let in_flight = InFlight::enter(site.calls.as_ref());
    let agent_key = site.agent_key;
    tokio::task::spawn_blocking(move || {
        let _in_flight = in_flight;
        let _scope = ScopeGuard::enter(Scope::Callback(agent_key));
        invoke()
    })
    .await
}

/// Runs `invoke` (which calls C) right here, counted and scoped. On a worker thread of a
/// multi-threaded runtime the thread leaves the worker pool meanwhile (`block_in_place`), so a
/// slow callback delays only its own task.
pub(crate) fn run_inline<T>(site: &CallbackSite, invoke: impl FnOnce() -> T) -> T {
    let _in_flight = InFlight::enter(site.calls.as_ref());
    let _scope = ScopeGuard::enter(Scope::Callback(site.agent_key));
    pi_agent::off_worker(invoke)
}
