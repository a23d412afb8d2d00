//! [`SharedString`]: the text of a content block, shared instead of copied.
//!
//! A message travels through many owners at once: the transcript, the stepper, the model
//! call's context, the events `message_start` / `message_end` / `tool_execution_end`, a
//! snapshot, a binding. With `String` content each of them held a full copy, so a 200 MiB tool
//! result cost a gigabyte. A `SharedString` clone is a reference count; the text is copied only
//! when one owner changes a text that another still holds (copy on write), which the library
//! itself never does outside a stream's own partial message.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// An immutable-looking, cheaply cloned string: `Arc<String>` behind the API of a `&str`.
///
/// It reads like a `str` (`Deref`, `AsRef<str>`, `==` with `str` and `String`) and serialises
/// as a plain JSON string. Build it with `.into()` from a `String` (no copy) or a `&str`; take
/// a `String` back with [`into_string`](Self::into_string) (no copy when it is the last owner).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedString(Arc<String>);

impl SharedString {
    /// An empty string.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Appends `text`; copies the text first only when another owner shares it.
    pub fn push_str(&mut self, text: &str) {
        Arc::make_mut(&mut self.0).push_str(text);
    }

    /// The text for changing in place (copied first only when another owner shares it).
    pub fn make_mut(&mut self) -> &mut String {
        Arc::make_mut(&mut self.0)
    }

    /// The text as a `String`: moved out when this is the last owner, copied otherwise.
    pub fn into_string(self) -> String {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }

    /// Whether `a` and `b` are the same allocation (a clone of each other), not just equal.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl Deref for SharedString {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedString {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedString {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SharedString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<String> for SharedString {
    fn from(text: String) -> Self {
        Self(Arc::new(text))
    }
}

impl From<&str> for SharedString {
    fn from(text: &str) -> Self {
        Self(Arc::new(text.to_owned()))
    }
}

impl From<&String> for SharedString {
    fn from(text: &String) -> Self {
        Self(Arc::new(text.clone()))
    }
}

impl From<std::borrow::Cow<'_, str>> for SharedString {
    fn from(text: std::borrow::Cow<'_, str>) -> Self {
        Self(Arc::new(text.into_owned()))
    }
}

impl From<Box<str>> for SharedString {
    fn from(text: Box<str>) -> Self {
        Self(Arc::new(text.into_string()))
    }
}

impl From<SharedString> for String {
    fn from(text: SharedString) -> Self {
        text.into_string()
    }
}

impl PartialEq<str> for SharedString {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedString {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedString {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<SharedString> for str {
    fn eq(&self, other: &SharedString) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedString> for &str {
    fn eq(&self, other: &SharedString) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedString> for String {
    fn eq(&self, other: &SharedString) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Serialize for SharedString {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedString {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_and_writes_copy_only_when_shared() {
        let mut a = SharedString::from(String::from("abc"));
        let b = a.clone();
        assert!(SharedString::ptr_eq(&a, &b));
        a.push_str("d");
        assert_eq!(a, "abcd");
        assert_eq!(b, "abc");
        assert!(!SharedString::ptr_eq(&a, &b));
        let before = a.as_ptr();
        a.push_str("");
        assert_eq!(a.as_ptr(), before, "a unique owner writes in place");
        assert_eq!(b.into_string(), "abc");
    }

    #[test]
    fn json_is_a_plain_string() {
        let text = SharedString::from("a\"b");
        assert_eq!(serde_json::to_string(&text).unwrap(), r#""a\"b""#);
        let back: SharedString = serde_json::from_str(r#""a\"b""#).unwrap();
        assert_eq!(back, text);
        assert_eq!(format!("{text:?}"), r#""a\"b""#);
    }
}
