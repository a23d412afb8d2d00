//! `pi_agent.SessionSubscription`: a session's journal records from a cursor, then live.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pi_agent::session::Subscription;
use pyo3::prelude::*;

use crate::convert::serde_to_py;
use crate::errors::session_error;
use crate::runtime::{Interrupted, timeout_seconds, wait};

/// Journal records `{"seq", "attempt", "event"}` after a cursor, in order, then live ones.
#[pyclass(module = "pi_agent", name = "SessionSubscription", frozen)]
pub(crate) struct PySessionSubscription {
    subscription: Arc<tokio::sync::Mutex<Subscription>>,
    /// The cursor as of the last record handed out (readable while a `next` waits).
    cursor: Arc<AtomicU64>,
}

impl PySessionSubscription {
    pub(crate) fn new(subscription: Subscription) -> Self {
        Self {
            cursor: Arc::new(AtomicU64::new(subscription.cursor())),
            subscription: Arc::new(tokio::sync::Mutex::new(subscription)),
        }
    }

    fn wait_next<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let subscription = Arc::clone(&self.subscription);
        let cursor = Arc::clone(&self.cursor);
        let limit = timeout_seconds(timeout)?;
        let record = wait(
            py,
            async move {
                let mut subscription = subscription.lock().await;
                let record = match limit {
                    Some(limit) => subscription.next_timeout(limit).await,
                    None => subscription.next().await.transpose(),
                };
                cursor.store(subscription.cursor(), Ordering::Release);
                record
            },
            || Interrupted::Return,
        )?
        .map_err(session_error)?;
        // A record's event (raw JSON) becomes its dict in `serde_to_py`.
        record.map(|record| serde_to_py(py, &record)).transpose()
    }
}

#[pymethods]
impl PySessionSubscription {
    /// The next record, waiting up to `timeout` seconds (forever with `None`); `None` when
    /// none came in time or the session was closed and everything was read.
    #[pyo3(signature = (timeout = None))]
    fn next<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.wait_next(py, timeout)
    }

    /// The seq of the last record handed out: the cursor to resume from.
    #[getter]
    fn cursor(&self) -> u64 {
        self.cursor.load(Ordering::Acquire)
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.wait_next(py, None)
    }
}
