//! [`Session`]: the handle of one durable session.

use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::compaction::Compaction;
use super::control::Control;
use super::driver::drive;
use super::error::SessionError;
use super::options::SessionOptions;
use super::receipt::{Receipt, RequestKind};
use super::replay::restore;
use super::state::{Pending, SessionStatus, Shared};
use super::store::{Claim, SessionStore, off_worker};
use super::subscribe::Subscription;
use crate::agent::AgentMessage;

/// A durable agent session: an agent whose every event, message, request and step is written
/// to a [`SessionStore`] before it is shown, so the session survives the process.
///
/// Opening a session that exists resumes it from its journal: a finished step is never
/// redone, a model call that was in flight is made again from its start (its records carry
/// the next `attempt`), and a tool call that was in flight runs again only if its tool is
/// [`replay_safe`](crate::agent::AgentTool::replay_safe) — otherwise it gets an error result
/// ([`TOOL_INTERRUPTED`](super::TOOL_INTERRUPTED)).
///
/// Requests ([`prompt`](Self::prompt), [`steer`](Self::steer),
/// [`follow_up`](Self::follow_up)) carry the caller's id and are applied once: the same id
/// again returns the first [`Receipt`] and changes nothing, even after a restart.
///
/// The session runs on a task of the tokio runtime it was opened on. Dropping the handle
/// stops it where it is, as a crash would (reopen to resume); [`close`](Self::close) does
/// the same explicitly.
///
/// One handle drives a session at a time: opening it while another handle (in this process
/// or, for a shared store, another) has it open fails with [`StoreError::InUse`] (see
/// [`SessionStore::claim`]). To watch a session driven elsewhere, follow it
/// ([`Subscription::follow`](super::Subscription::follow)).
///
/// [`StoreError::InUse`]: super::StoreError::InUse
pub struct Session {
    shared: Arc<Shared>,
    driver: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The store's claim of the session, released at [`close`](Self::close).
    claim: Mutex<Option<Claim>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.shared.id)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Opens session `id` in `store` (creating it on its first request) and resumes any run
    /// its journal left unfinished. Call from within a tokio runtime.
    pub async fn open(
        store: Arc<dyn SessionStore>,
        id: impl Into<String>,
        options: SessionOptions,
    ) -> Result<Self, SessionError> {
        let id = id.into();
        if id.is_empty() {
            return Err(SessionError::EmptySessionId);
        }
        // Claimed before its journal is read: what another handle is still writing must not
        // be resumed here.
        let claim = off_worker(|| store.claim(&id))?;
        let (inner, run) = off_worker(|| restore(&*store, &id, &options))?;
        let status = if inner.running || !inner.inbox.is_empty() {
            SessionStatus::Running
        } else {
            SessionStatus::Idle
        };
        let shared = Arc::new(Shared {
            id,
            store,
            options,
            seq: watch::channel(inner.heads.seq).0,
            inner: Mutex::new(inner),
            work: watch::channel(0).0,
            status: watch::channel(status).0,
            closed: CancellationToken::new(),
        });
        let driver = tokio::spawn(drive(Arc::clone(&shared), run));
        Ok(Self {
            shared,
            driver: Mutex::new(Some(driver)),
            claim: Mutex::new(Some(claim)),
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The store the session writes to.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.shared.store
    }

    /// Asks for a run with `message` (while a run goes on, it waits as a follow-up).
    pub fn prompt(
        &self,
        request_id: &str,
        message: impl Into<AgentMessage>,
    ) -> Result<Receipt, SessionError> {
        self.request(RequestKind::Prompt, request_id, message.into())
    }

    /// Injects `message` after the current turn's tool calls (starts a run when idle).
    pub fn steer(
        &self,
        request_id: &str,
        message: impl Into<AgentMessage>,
    ) -> Result<Receipt, SessionError> {
        self.request(RequestKind::Steer, request_id, message.into())
    }

    /// Runs `message` when the agent would otherwise stop (starts a run when idle).
    pub fn follow_up(
        &self,
        request_id: &str,
        message: impl Into<AgentMessage>,
    ) -> Result<Receipt, SessionError> {
        self.request(RequestKind::FollowUp, request_id, message.into())
    }

    fn request(
        &self,
        kind: RequestKind,
        id: &str,
        message: AgentMessage,
    ) -> Result<Receipt, SessionError> {
        if id.is_empty() {
            return Err(SessionError::EmptyRequestId);
        }
        let shared = &self.shared;
        let mut inner = shared.lock();
        if let Some(receipt) = inner.receipts.get(id) {
            if receipt.kind == kind {
                return Ok(receipt.clone());
            }
            return Err(SessionError::RequestIdReused {
                id: id.to_owned(),
                kind: receipt.kind.as_str(),
            });
        }
        let receipt = Receipt {
            request_id: id.to_owned(),
            kind,
            seq: inner.heads.seq,
        };
        let control = Control::Request {
            id: id.to_owned(),
            kind,
            message,
            seq: receipt.seq,
        };
        // What is journalled must read back: a request the store holds but a reopen cannot
        // read would stop the session for good.
        let written = serde_json::to_string(&control).unwrap_or_default();
        if let Err(error) = serde_json::from_str::<Control>(&written) {
            return Err(SessionError::UnreadableMessage(error.to_string()));
        }
        shared.write(&mut inner, 0, &[], std::slice::from_ref(&control))?;
        if let Control::Request { message, .. } = control {
            inner.inbox.push_back(Pending {
                id: id.to_owned(),
                kind,
                message,
            });
        }
        inner.receipts.insert(id.to_owned(), receipt.clone());
        shared.publish_status(&inner);
        drop(inner);
        shared.work.send_modify(|n| *n += 1);
        Ok(receipt)
    }

    /// Aborts the current run: the model call ends (its partial text kept in an `aborted`
    /// message) and running tools get `aborted` results, all journalled. No-op when idle.
    pub fn abort(&self) {
        self.shared.lock().signal.cancel();
    }

    /// The transcript: every message whose `message_end` was journalled.
    pub fn transcript(&self) -> Vec<AgentMessage> {
        self.shared.lock().transcript.clone()
    }

    /// The last journalled record's seq.
    pub fn last_seq(&self) -> u64 {
        self.shared.lock().heads.seq
    }

    /// What the session is doing.
    pub fn status(&self) -> SessionStatus {
        self.shared.status.borrow().clone()
    }

    /// The latest compaction, if any.
    pub fn compaction(&self) -> Option<Compaction> {
        self.shared.lock().compaction.clone()
    }

    /// Waits until no run goes on and no request waits. `Err` when the session stopped (its
    /// store failed) or was closed.
    pub async fn wait_idle(&self) -> Result<(), SessionError> {
        let mut status = self.shared.status.subscribe();
        let closed = self.shared.closed.clone();
        let result = tokio::select! {
            () = closed.cancelled() => return Err(SessionError::Closed),
            result = status.wait_for(|status| *status != SessionStatus::Running) => result,
        };
        match result.map(|status| status.clone()) {
            Ok(SessionStatus::Stopped(reason)) => Err(SessionError::Stopped(reason)),
            Ok(_) => Ok(()),
            Err(_) => Err(SessionError::Closed),
        }
    }

    /// The journal after `after` (0: from the start), then live records as they are
    /// written.
    pub fn subscribe(&self, after: u64) -> Subscription {
        Subscription::live(
            Arc::clone(&self.shared.store),
            self.shared.id.clone(),
            after,
            self.shared.seq.subscribe(),
            self.shared.closed.clone(),
            self.shared.status.subscribe(),
        )
    }

    /// Summarises the older turns now (before the next model call when a run goes on).
    /// `Ok(None)` when there is nothing new to compact.
    pub async fn compact(&self) -> Result<Option<Compaction>, SessionError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut inner = self.shared.lock();
            if let Some(reason) = &inner.stopped {
                return Err(SessionError::Stopped(reason.clone()));
            }
            if self.shared.closed.is_cancelled() {
                return Err(SessionError::Closed);
            }
            inner.compact_requests.push(reply);
        }
        self.shared.work.send_modify(|n| *n += 1);
        // The driver answers, or drops the request when it ends (closed, or stopped by an
        // error); `closed` also covers a close that comes before the driver's task is dropped.
        let closed = self.shared.closed.clone();
        tokio::select! {
            () = closed.cancelled() => Err(SessionError::Closed),
            answer = answer => answer.map_err(|_| SessionError::Closed)?,
        }
    }

    /// Stops the session where it is (as [`Drop`] does): the running step is cancelled
    /// without being journalled, so reopening the session resumes it.
    pub fn close(&self) {
        self.shared.closed.cancel();
        self.shared.lock().signal.cancel();
        let driver = self
            .driver
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(driver) = driver {
            driver.abort();
        }
        // Another handle may open it now (a write the aborted driver still makes is refused
        // as a conflict, as ever).
        self.claim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}
