//! `pi_agent.Session`: a durable agent session in a SQLite file (core's `pi_agent::session`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use pi_agent::agent::{AgentSettings, AgentTool};
use pi_agent::ai::UserMessage;
use pi_agent::session::{
    CompactionSettings, Receipt, Session, SessionError as CoreError, SessionOptions, SessionStore,
    SqliteStore,
};
use pyo3::prelude::*;
use pyo3::{PyTraverseError, PyVisit};

use crate::agent::NEXT_ID;
use crate::bridge::{helper, inside_run_of};
use crate::callable::RunScope;
use crate::convert::{from_py, parse_value, serde_to_py};
use crate::errors::{PiError, session_error};
use crate::model::PyModel;
use crate::runtime::{Interrupted, timeout_seconds, wait};
use crate::session_subscription::PySessionSubscription;
use crate::tools::{PyTool, ToolRefs};

/// Opens the SQLite store at `path`, with the GIL released (a new file's switch to WAL may
/// wait for other processes up to the busy timeout).
pub(crate) fn open_store(
    py: Python<'_>,
    path: &std::path::Path,
) -> PyResult<Arc<dyn SessionStore>> {
    let store = py
        .detach(|| SqliteStore::open(path))
        .map_err(|error| session_error(error.into()))?;
    Ok(Arc::new(store))
}

/// A durable agent session: every event, message, request and step is written to a SQLite
/// file before it is shown, so the session survives the process.
#[pyclass(module = "pi_agent", name = "Session", frozen)]
pub(crate) struct PySession {
    session: Arc<Session>,
    /// This session among `bridge.owners`: its tools run as its own, so that a wait for the
    /// session from one of them is refused instead of waiting for itself.
    id: u64,
    /// The Python functions of the session's core tools, for `__traverse__`.
    tool_refs: Vec<Arc<ToolRefs>>,
    /// The scope of the session's tool calls (whether any is in flight).
    scope: RunScope,
}

fn receipt<'py>(
    py: Python<'py>,
    receipt: Result<Receipt, CoreError>,
) -> PyResult<Bound<'py, PyAny>> {
    serde_to_py(py, &receipt.map_err(session_error)?)
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (
        store_path, session_id, model, *, system_prompt = "", tools = None,
        settings = None, compaction = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store_path: std::path::PathBuf,
        session_id: String,
        model: &Bound<'_, PyAny>,
        system_prompt: &str,
        tools: Option<&Bound<'_, PyAny>>,
        settings: Option<&Bound<'_, PyAny>>,
        compaction: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut options = SessionOptions::new(PyModel::extract(model)?);
        options.system_prompt = system_prompt.to_owned();
        if let Some(settings) = settings.filter(|s| !s.is_none()) {
            options.settings = parse_value::<AgentSettings>(from_py(settings)?, "settings")?;
        }
        if let Some(compaction) = compaction.filter(|c| !c.is_none()) {
            options.compaction =
                parse_value::<CompactionSettings>(from_py(compaction)?, "compaction")?;
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let scope = RunScope::default();
        let mut tool_refs = Vec::new();
        if let Some(tools) = tools.filter(|t| !t.is_none()) {
            let owners = helper(py, "owners_with")?.call1((id,))?.unbind();
            scope.lock().owners = Some(Arc::new(owners));
            options.tools = tools
                .try_iter()?
                .map(|tool| {
                    let tool = PyTool::extract(&tool?)?;
                    let (tool, refs) = tool.get().to_agent_tool_with_refs(py, scope.clone());
                    tool_refs.extend(refs);
                    Ok(tool)
                })
                .collect::<PyResult<Vec<Arc<dyn AgentTool>>>>()?;
        }
        let store = open_store(py, &store_path)?;
        let session = wait(py, Session::open(store, session_id, options), || {
            Interrupted::Return
        })?
        .map_err(session_error)?;
        Ok(Self {
            session: Arc::new(session),
            id,
            tool_refs,
            scope,
        })
    }

    /// The session id.
    #[getter]
    fn id(&self) -> &str {
        self.session.id()
    }

    /// The seq of the last journalled record.
    #[getter]
    fn last_seq(&self, py: Python<'_>) -> u64 {
        // The session's lock, which its driver holds while it writes: never with the GIL.
        py.detach(|| self.session.last_seq())
    }

    /// Asks for a run with the user message `text`; returns the receipt
    /// `{"requestId", "kind", "seq"}`. The same `request_id` again is a no-op returning the
    /// same receipt, also after a restart.
    fn prompt<'py>(
        &self,
        py: Python<'py>,
        request_id: &str,
        text: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        // A journal write (SQLite, up to its busy timeout): with the GIL released.
        let written = py.detach(|| self.session.prompt(request_id, UserMessage::text(text)));
        receipt(py, written)
    }

    /// Injects `text` after the current turn's tool calls (starts a run when idle).
    fn steer<'py>(
        &self,
        py: Python<'py>,
        request_id: &str,
        text: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let written = py.detach(|| self.session.steer(request_id, UserMessage::text(text)));
        receipt(py, written)
    }

    /// Runs `text` when the agent would otherwise stop (starts a run when idle).
    fn follow_up<'py>(
        &self,
        py: Python<'py>,
        request_id: &str,
        text: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let written = py.detach(|| self.session.follow_up(request_id, UserMessage::text(text)));
        receipt(py, written)
    }

    /// Aborts the current run (no-op when idle).
    fn abort(&self, py: Python<'_>) {
        py.detach(|| self.session.abort());
    }

    /// Blocks (GIL released) until no run goes on; `False` when `timeout` seconds passed
    /// first. Raises `SessionError` when the session stopped.
    #[pyo3(signature = (timeout = None))]
    fn wait_idle(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        self.refuse_inside_own_run(py, "wait_idle()")?;
        let session = Arc::clone(&self.session);
        let limit = timeout_seconds(timeout)?;
        let outcome = wait(
            py,
            async move {
                match limit {
                    Some(limit) => tokio::time::timeout(limit, session.wait_idle()).await.ok(),
                    None => Some(session.wait_idle().await),
                }
            },
            || Interrupted::Return,
        )?;
        match outcome {
            None => Ok(false),
            Some(result) => result.map(|()| true).map_err(session_error),
        }
    }

    /// The transcript: a list of message dicts.
    fn transcript<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let transcript = py.detach(|| self.session.transcript());
        serde_to_py(py, &transcript)
    }

    /// Summarises the older turns now; the compaction dict `{"summary", "covers",
    /// "tokensBefore"}`, or `None` when there was nothing new to compact.
    fn compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.refuse_inside_own_run(py, "compact()")?;
        let session = Arc::clone(&self.session);
        let compaction = wait(py, async move { session.compact().await }, || {
            Interrupted::Return
        })?
        .map_err(session_error)?;
        serde_to_py(py, &compaction)
    }

    /// The journal records after `after` (0: from the start), then live ones.
    #[pyo3(signature = (after = 0))]
    fn subscribe(&self, after: u64) -> PySessionSubscription {
        PySessionSubscription::new(self.session.subscribe(after))
    }

    /// Follows session `session_id` of the SQLite file at `store_path` (which must exist) after
    /// `after`, without running it (another process's session, for one).
    #[staticmethod]
    #[pyo3(signature = (store_path, session_id, after = 0))]
    fn follow(
        py: Python<'_>,
        store_path: std::path::PathBuf,
        session_id: &str,
        after: u64,
    ) -> PyResult<PySessionSubscription> {
        let store = py
            .detach(|| SqliteStore::open_existing(&store_path))
            .map_err(|error| session_error(error.into()))?;
        Ok(PySessionSubscription::new(
            pi_agent::session::Subscription::follow(Arc::new(store), session_id, after),
        ))
    }

    /// The ids of the sessions in the SQLite file at `store_path` (which must exist), sorted.
    #[staticmethod]
    fn sessions(py: Python<'_>, store_path: std::path::PathBuf) -> PyResult<Vec<String>> {
        py.detach(|| {
            let store = SqliteStore::open_existing(&store_path)?;
            store.sessions()
        })
        .map_err(|error| session_error(error.into()))
    }

    /// Deletes session `session_id` of the SQLite file at `store_path` (which must exist):
    /// `True` when it had a journal. Raises `SessionInUseError` while a handle (in this
    /// process or another) has it open.
    #[staticmethod]
    fn delete(py: Python<'_>, store_path: std::path::PathBuf, session_id: &str) -> PyResult<bool> {
        if session_id.is_empty() {
            return Err(session_error(CoreError::EmptySessionId));
        }
        py.detach(|| {
            let store = SqliteStore::open_existing(&store_path)?;
            store.delete(session_id)
        })
        .map_err(|error| session_error(error.into()))
    }

    /// Stops the session where it is, as a killed process would (reopen it to resume).
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.session.close());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.session.close();
    }

    /// Shows the garbage collector its tools' functions, so that a session in a reference
    /// cycle (a tool that refers back to its owner) is collected, which stops it as dropping
    /// it does. While a run goes on or a call of a tool is still alive, the session's driver
    /// may call them out of the collector's sight: they are shown only when neither is (as
    /// `Agent.__traverse__` does, for the same reasons).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let running = matches!(
            self.session.status(),
            pi_agent::session::SessionStatus::Running
        );
        if running || self.scope.calls_in_flight() {
            return Ok(());
        }
        for refs in &self.tool_refs {
            refs.traverse(&visit)?;
        }
        Ok(())
    }
}

impl PySession {
    /// Refuses a wait for this session from inside its own run (one of its tools): the run
    /// cannot go on while its tool waits for it.
    fn refuse_inside_own_run(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if inside_run_of(py, self.id)? {
            return Err(PiError::new_err(format!(
                "Session.{what} called from inside the session's own run (one of its tools): it \
                 would wait for itself forever"
            )));
        }
        Ok(())
    }
}
