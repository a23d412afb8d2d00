//! What a caught panic says, for the errors that report it (a provider task, a tool, a hook).

/// The text of a panic payload (`panic!`'s message), or `"unknown panic"`.
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}
