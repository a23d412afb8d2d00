//! The client side of the session: what the library does with the server's notifications.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, NumberOrString, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::{NotificationContext, RoleClient};
use serde_json::json;
use tokio::sync::Notify;

use crate::agent::{AgentToolResult, ToolUpdates};

/// State shared by a server's connections (one at a time, across reconnections) and its tools.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Where the progress of each call in flight goes, by its progress token, with the route's
    /// number: tokens restart with each session, so a call of an ended session may hold the
    /// token a new call uses, and its route's end must not remove the new call's.
    progress: Mutex<HashMap<ProgressToken, (u64, ToolUpdates)>>,
    /// The number of the next progress route.
    next_route: std::sync::atomic::AtomicU64,
    /// Set by `notifications/tools/list_changed`, cleared by a refresh.
    pub(crate) tools_changed: std::sync::atomic::AtomicBool,
    /// Woken by `notifications/tools/list_changed`.
    pub(crate) tools_changed_notify: Notify,
}

impl Shared {
    /// Routes the progress of the call with `token` to `updates` until the guard is dropped.
    pub(crate) fn route_progress(
        self: &Arc<Self>,
        token: ProgressToken,
        updates: ToolUpdates,
    ) -> ProgressRoute {
        let route = self
            .next_route
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), (route, updates));
        ProgressRoute {
            shared: Arc::clone(self),
            token,
            route,
        }
    }
}

/// Removes a call's progress route when the call ends (however it ends).
pub(crate) struct ProgressRoute {
    shared: Arc<Shared>,
    token: ProgressToken,
    route: u64,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        let mut progress = self
            .shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Only its own route: a later call may have the same token.
        if progress
            .get(&self.token)
            .is_some_and(|(route, _)| *route == self.route)
        {
            progress.remove(&self.token);
        }
    }
}

/// The partial result a progress notification becomes: a line of text for user interfaces,
/// the numbers in the details.
pub(crate) fn progress_result(params: &ProgressNotificationParam) -> AgentToolResult {
    let mut text = match params.total {
        Some(total) => format!("progress {}/{}", params.progress, total),
        None => format!("progress {}", params.progress),
    };
    if let Some(message) = &params.message {
        text.push_str(": ");
        text.push_str(message);
    }
    let token = match &params.progress_token.0 {
        NumberOrString::Number(number) => json!(number),
        NumberOrString::String(string) => json!(string.as_ref()),
    };
    AgentToolResult::text(text).with_details(json!({
        "progressToken": token,
        "progress": params.progress,
        "total": params.total,
        "message": params.message,
    }))
}

/// The library's [`ClientHandler`]: forwards progress, records tool-list changes.
#[derive(Clone, Debug)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let updates = self
            .shared
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&params.progress_token)
            .map(|(_, updates)| updates.clone());
        if let Some(updates) = updates {
            updates.send(progress_result(&params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.shared
            .tools_changed
            .store(true, std::sync::atomic::Ordering::Release);
        // A permit is kept if the watcher is busy refreshing: the change is not missed.
        self.shared.tools_changed_notify.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pi-agent", crate::VERSION),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_calls_route_does_not_remove_a_later_calls_with_the_same_token() {
        let shared = Arc::new(Shared::default());
        let token = ProgressToken(NumberOrString::Number(0));
        let old = shared.route_progress(token.clone(), ToolUpdates::disconnected());
        // A new session's first call: tokens start again at 0.
        let new = shared.route_progress(token.clone(), ToolUpdates::disconnected());
        drop(old);
        let routes = |shared: &Shared| shared.progress.lock().unwrap().len();
        assert_eq!(routes(&shared), 1, "the new call's route stays");
        drop(new);
        assert_eq!(routes(&shared), 0);
    }
}
