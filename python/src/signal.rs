//! `Signal`: a cancellation token (pi's `AbortSignal` and `AbortController` in one), shared
//! between Python and core: an agent run's signal (`agent.signal`, `ToolContext.signal`, the
//! second argument of subscribers), or one made in Python to cancel a request or a login.

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::bridge::{drive, future_into_py};
use crate::runtime::{Interrupted, timeout_seconds, wait};

/// A cancellation token: `aborted`, `abort()`, and waits for the abort.
#[pyclass(module = "pi_agent", name = "Signal", frozen)]
pub(crate) struct PySignal {
    pub(crate) token: CancellationToken,
}

impl PySignal {
    pub(crate) fn new(token: CancellationToken) -> Self {
        Self { token }
    }
}

#[pymethods]
impl PySignal {
    /// A new signal, not aborted.
    #[new]
    fn create() -> Self {
        Self::new(CancellationToken::new())
    }

    /// Whether the signal was aborted.
    #[getter]
    fn aborted(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Aborts: whatever watches this signal stops (thread-safe; again: nothing happens).
    fn abort(&self) {
        self.token.cancel();
    }

    /// Resolves once the signal is aborted: `await signal.wait()`.
    fn wait<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        drive("Signal.wait", slf.getattr("_wait_future")?, [])
    }

    fn _wait_future<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let token = self.token.clone();
        future_into_py(py, async move {
            token.cancelled().await;
            Ok(())
        })
    }

    /// Blocks (GIL released) until the signal is aborted or `timeout` seconds passed; returns
    /// whether it was aborted.
    #[pyo3(signature = (timeout = None))]
    fn wait_sync(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let token = self.token.clone();
        let limit = timeout_seconds(timeout)?;
        wait(
            py,
            async move {
                match limit {
                    Some(limit) => tokio::time::timeout(limit, token.cancelled()).await.is_ok(),
                    None => {
                        token.cancelled().await;
                        true
                    }
                }
            },
            || Interrupted::Return,
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "Signal(aborted={})",
            if self.token.is_cancelled() {
                "True"
            } else {
                "False"
            }
        )
    }
}
