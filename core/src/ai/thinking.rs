//! How hard a reasoning model should think: one level type, `off` included, for what a request
//! asks for and for the levels a model offers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How hard a reasoning model should think, `off` included (pi-agent-core's `ThinkingLevel`;
/// pi-ai's `ThinkingLevel` is this without `off`, and its `ThinkingLevel` is this). The
/// variants are in pi's order, from `Off` to `Xhigh`, and compare in that order.
///
/// Where a request takes an `Option<ThinkingLevel>` (`StreamOptions::reasoning`), `None` and
/// `Some(Off)` both mean no reasoning.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning (the default).
    #[default]
    Off,
    /// The least.
    Minimal,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high (only models whose `thinkingLevelMap` lists it support it).
    Xhigh,
}

impl ThinkingLevel {
    /// Every level, from `Off` to `Xhigh` (pi's `EXTENDED_THINKING_LEVELS`).
    pub const ALL: [ThinkingLevel; 6] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
    ];

    /// The wire name (`"off"`, `"minimal"`, ...), also the key in a model's
    /// `thinkingLevelMap`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }

    /// The level named `name` (a wire name), or `None`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }

    /// The level to request: `None` for `Off`.
    pub fn enabled(self) -> Option<Self> {
        (self != Self::Off).then_some(self)
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Option<ThinkingLevel>> for ThinkingLevel {
    /// `None` is `Off`.
    fn from(level: Option<ThinkingLevel>) -> Self {
        level.unwrap_or(Self::Off)
    }
}
