//! `pi_agent.SessionSubscription`: a session's journal records from a cursor, then live.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pi_agent::session::{JournalRecord, Subscription};
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
    /// A record read on the runtime, not handed out yet: a wait interrupted (Ctrl-C) after
    /// the read leaves it here for the next call, so no record is skipped.
    front: Arc<Mutex<Option<JournalRecord>>>,
}

impl PySessionSubscription {
    pub(crate) fn new(subscription: Subscription) -> Self {
        Self {
            cursor: Arc::new(AtomicU64::new(subscription.cursor())),
            subscription: Arc::new(tokio::sync::Mutex::new(subscription)),
            front: Arc::default(),
        }
    }

    /// The record in front, handed out (the cursor moves past it).
    fn take_front<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let record = self
            .front
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(record) = record else {
            return Ok(None);
        };
        self.cursor.store(record.seq, Ordering::Release);
        // A record's event (raw JSON) becomes its dict in `serde_to_py`.
        serde_to_py(py, &record).map(Some)
    }

    fn wait_next<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some(record) = self.take_front(py)? {
            return Ok(Some(record));
        }
        let subscription = Arc::clone(&self.subscription);
        let front = Arc::clone(&self.front);
        let limit = timeout_seconds(timeout)?;
        wait(
            py,
            async move {
                let mut subscription = subscription.lock().await;
                // Another waiter's record is still in front: it goes first.
                if front
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some()
                {
                    return Ok(());
                }
                let record = match limit {
                    Some(limit) => subscription.next_timeout(limit).await,
                    None => subscription.next().await.transpose(),
                }?;
                *front.lock().unwrap_or_else(PoisonError::into_inner) = record;
                Ok(())
            },
            || Interrupted::Return,
        )?
        .map_err(session_error)?;
        self.take_front(py)
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
