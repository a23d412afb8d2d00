//! Where a provider reads its environment variables from: the process environment, or a fixed
//! map (for applications that keep credentials out of the process environment, and for tests).
//! Bedrock (`AWS_*`) and Vertex (`GOOGLE_*`) read ambient credentials through this.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Where variables (and `HOME`, for credential files under it) are read from.
#[derive(Clone, Default)]
pub(crate) enum Environment {
    /// The process environment.
    #[default]
    Process,
    /// A fixed set of variables, in place of the process environment.
    Fixed(BTreeMap<String, String>),
}

impl Environment {
    /// A fixed environment holding `vars`.
    pub(crate) fn fixed<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self::Fixed(
            vars.into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        )
    }

    /// The value of `name` when it is set and not empty.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        match self {
            Self::Process => std::env::var(name).ok(),
            Self::Fixed(vars) => vars.get(name).cloned(),
        }
        .filter(|value| !value.is_empty())
    }

    /// The home directory: `HOME` (`USERPROFILE` on Windows).
    pub(crate) fn home(&self) -> Option<PathBuf> {
        self.var("HOME")
            .or_else(|| self.var("USERPROFILE"))
            .map(PathBuf::from)
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Process => f.write_str("Environment::Process"),
            // Values may be secrets: only the names are shown.
            Self::Fixed(vars) => f
                .debug_tuple("Environment::Fixed")
                .field(&vars.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_values_are_read_and_never_shown() {
        let env = Environment::fixed([("A", "secret-value"), ("EMPTY", "")]);
        assert_eq!(env.var("A").as_deref(), Some("secret-value"));
        assert_eq!(env.var("EMPTY"), None);
        assert_eq!(env.var("MISSING"), None);
        assert!(!format!("{env:?}").contains("secret-value"));
    }
}
