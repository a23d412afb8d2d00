//! The JSON keys a serde shape reads, so that bindings can check their own type declarations
//! (Python's `TypedDict`s and stubs) against core instead of keeping a second list by hand.
//!
//! [`shape_fields`] asks the type's `Deserialize` implementation itself: a probe deserializer
//! records the field list that serde's derive passes to `deserialize_struct`, then stops.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The top-level JSON keys `T` reads (its field names after `rename`/`rename_all`, and any
/// `alias`es), in declaration order; `None` when `T` does not deserialize as a struct (an
/// enum, a map, a flattened struct). Fields marked `#[serde(skip)]` (callbacks, signals) are
/// not JSON and are not listed.
pub fn shape_fields<T: for<'de> Deserialize<'de>>() -> Option<&'static [&'static str]> {
    let seen = Cell::new(None);
    // The probe always fails: only the recorded field list matters.
    let _ = T::deserialize(Probe { seen: &seen });
    seen.get()
}

/// A deserializer that records the field list of the first struct asked for and fails.
struct Probe<'a> {
    seen: &'a Cell<Option<&'static [&'static str]>>,
}

/// The probe's (only) outcome.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("shape probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: fmt::Display>(_message: M) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.seen.set(Some(fields));
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value};

    use super::*;
    use crate::ai::options::StreamOptions;

    /// The probe lists exactly the keys `StreamOptions` accepts: serde knows every listed key
    /// (a wrong value for it is a type error, not an unknown field), and refuses others.
    #[test]
    fn stream_options_fields_are_what_serde_accepts() {
        let fields = shape_fields::<StreamOptions>().expect("a struct");
        for field in fields {
            let one: Map<String, Value> =
                std::iter::once(((*field).to_owned(), Value::Array(Vec::new()))).collect();
            let outcome = serde_json::from_value::<StreamOptions>(Value::Object(one));
            if let Err(error) = outcome {
                assert!(
                    !error.to_string().contains("unknown field"),
                    "{field}: {error}"
                );
            }
        }
        let unknown = serde_json::from_str::<StreamOptions>(r#"{"notAnOption":1}"#).unwrap_err();
        assert!(unknown.to_string().contains("unknown field"), "{unknown}");
        assert!(fields.contains(&"maxTokens"));
        assert!(fields.contains(&"apiKey"));
        assert!(fields.contains(&"azureDeploymentName"));
        assert!(!fields.contains(&"signal"));
        assert!(!fields.contains(&"onPayload"));
        assert_eq!(shape_fields::<Value>(), None);
        assert_eq!(shape_fields::<crate::ai::types::StopReason>(), None);
    }
}
