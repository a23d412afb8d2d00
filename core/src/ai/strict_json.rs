//! Reading settings and option objects from JSON so that only a JSON object can be an object.
//!
//! serde's derived structs also accept a JSON array, field by field in declaration order, so
//! `["high"]` given as agent settings would set the first field (`thinkingLevel`) to `"high"`
//! and `[1, 2]` as `tokenSize` would be `{min: 1, max: 2}`: a caller's mistake silently read as
//! something else. [`from_str`] and [`from_value`] read the same types through a deserializer
//! that refuses an array wherever a struct is expected, at any depth, with the path of the
//! field: ``settings.streamOptions.thinkingBudgets: expected a JSON object, got an array``.
//!
//! The C ABI and the Python binding read every settings and options object through these (the
//! agent's settings, stream options, faux-provider options, models, usage), so both refuse
//! the same inputs with the same words.

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde_json::Value;

/// Parses `text` as a `T`, refusing a JSON array where `T` (or any struct inside it) expects an
/// object. Other errors are serde_json's.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    // A text with no `[` has no array anywhere, so the strict reading has nothing to refuse:
    // serde's own reading, in one pass, accepts the same texts and reads the same values. It
    // is what a C caller's options take on every `pi_stream_open` (three passes cost about
    // 18 µs of a cold first event). Its errors name a line and column that the strict
    // reading's do not, so a failure is read again below for the usual words.
    if !text.as_bytes().contains(&b'[')
        && let Ok(read) = serde_json::from_str(text)
    {
        return Ok(read);
    }
    let value: Value = serde_json::from_str(text)?;
    let read = from_value(&value)?;
    // A `Value` keeps only the last of a key given twice; serde's own reading refuses a field
    // given twice (`duplicate field`), and what this accepts must read the same way there.
    serde_json::from_str::<T>(text)?;
    Ok(read)
}

/// `error`'s words with every string value it quotes hidden: ``invalid type: string "…",
/// expected struct OAuthCredentials``. For JSON that holds credentials, where a token given in
/// the wrong place would otherwise be quoted in the error (and from there reach a log). Field
/// names (quoted with backticks) and the position stay.
pub fn error_without_values(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' {
            // Skip to the closing quote (serde writes the value escaped: `\"` is inside).
            let mut escaped = false;
            for inner in chars.by_ref() {
                match inner {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => break,
                    _ => {}
                }
            }
            out.push_str("…\"");
        }
    }
    out
}

/// Reads `value` as a `T` like [`from_str`].
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    T::deserialize(Strict {
        value,
        path: String::new(),
    })
}

/// A value and where it is (`a.b.0.c`; empty at the top).
struct Strict<'a> {
    value: &'a Value,
    path: String,
}

/// `parent.key` (`key` at the top).
fn child_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

impl Strict<'_> {
    fn not_an_object(&self) -> serde_json::Error {
        let place = if self.path.is_empty() {
            String::new()
        } else {
            format!("`{}`: ", self.path)
        };
        de::Error::custom(format!("{place}expected a JSON object, got an array"))
    }
}

impl<'de> Deserializer<'de> for Strict<'de> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.value {
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.iter().enumerate(),
                parent: self.path,
                len: items.len(),
            }),
            Value::Object(map) => visitor.visit_map(Entries {
                entries: map.iter(),
                parent: self.path,
                pending: None,
            }),
            // Scalars carry no struct inside: serde_json's own reading (numbers keep their
            // exact form).
            scalar => scalar.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if self.value.is_array() {
            return Err(self.not_an_object());
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        if self.value.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        // Unit variants (`"high"`) are the options' enums; a variant with data is read as
        // serde_json reads it.
        match self.value {
            Value::String(text) => visitor.visit_enum(text.as_str().into_deserializer()),
            other => other.deserialize_enum(name, variants, visitor),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.value.deserialize_unit_struct(name, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit seq tuple tuple_struct map identifier ignored_any
    }
}

/// The items of an array, each read strictly.
struct Seq<'a, I: Iterator<Item = (usize, &'a Value)>> {
    items: I,
    parent: String,
    len: usize,
}

impl<'de, I: Iterator<Item = (usize, &'de Value)>> de::SeqAccess<'de> for Seq<'de, I> {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        let Some((index, value)) = self.items.next() else {
            return Ok(None);
        };
        self.len -= 1;
        let path = child_path(&self.parent, &index.to_string());
        seed.deserialize(Strict { value, path }).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len)
    }
}

/// The entries of an object, each value read strictly.
struct Entries<'a> {
    entries: serde_json::map::Iter<'a>,
    parent: String,
    pending: Option<(&'a String, &'a Value)>,
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some((key, value));
        seed.deserialize(key.as_str().into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| <serde_json::Error as de::Error>::custom("value without a key"))?;
        let path = child_path(&self.parent, key);
        seed.deserialize(Strict { value, path })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_without_values_hide_quoted_strings_only() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Credentials {
            access: String,
        }
        let error = serde_json::from_str::<std::collections::BTreeMap<String, Credentials>>(
            r#"{"p": "at-SECRET-\"quoted\"-0123"}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("SECRET"));
        let shown = super::error_without_values(&error);
        assert!(
            !shown.contains("SECRET") && !shown.contains("quoted"),
            "{shown}"
        );
        assert!(
            shown.starts_with("invalid type: string \"…\", expected struct Credentials"),
            "{shown}"
        );
        let missing = serde_json::from_str::<Credentials>("{}").unwrap_err();
        assert_eq!(super::error_without_values(&missing), missing.to_string());
    }

    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
    struct Inner {
        min: u32,
        max: u32,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
    struct Outer {
        level: Option<String>,
        size: Option<Inner>,
        list: Vec<Inner>,
        any: Option<Value>,
    }

    #[test]
    fn objects_read_as_serde_json_reads_them() {
        let value = json!({"level": "high", "size": {"min": 1, "max": 2},
                           "list": [{"min": 3}], "any": [1, {"a": [2]}]});
        let strict: Outer = from_value(&value).unwrap();
        assert_eq!(strict, serde_json::from_value::<Outer>(value).unwrap());
    }

    #[test]
    fn a_text_without_arrays_reads_as_the_strict_reading_reads_it() {
        for text in [
            r#"{"level": "high", "size": {"min": 1, "max": 2}, "any": {"a": null}}"#,
            r#"{"level": null}"#,
            "{}",
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                from_str::<Outer>(text).unwrap(),
                from_value::<Outer>(&value).unwrap(),
                "{text}"
            );
        }
        // Refused with the strict reading's words (no line and column).
        for text in [
            r#"{"level": 5}"#,
            r#"{"size": {"min": "x"}}"#,
            r#"{"other": 1}"#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                from_str::<Outer>(text).unwrap_err().to_string(),
                from_value::<Outer>(&value).unwrap_err().to_string(),
                "{text}"
            );
        }
        let error = from_str::<Outer>(r#"{"level":"high","level":"low"}"#).unwrap_err();
        assert!(
            error.to_string().contains("duplicate field `level`"),
            "{error}"
        );
    }

    #[test]
    fn a_field_given_twice_is_refused() {
        let error = from_str::<Outer>(r#"{"level":"high","level":"high"}"#)
            .expect_err("a duplicated field is refused");
        assert!(
            error.to_string().contains("duplicate field `level`"),
            "{error}"
        );
    }

    #[test]
    fn arrays_are_refused_where_an_object_belongs_with_the_path() {
        // serde alone reads these by position.
        assert!(serde_json::from_str::<Outer>(r#"["high"]"#).is_ok());
        let error = from_str::<Outer>(r#"["high"]"#).unwrap_err().to_string();
        assert_eq!(error, "expected a JSON object, got an array");
        let error = from_str::<Outer>(r#"{"size": [1, 2]}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(error, "`size`: expected a JSON object, got an array");
        let error = from_str::<Outer>(r#"{"list": [{"min": 1}, [1]]}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(error, "`list.1`: expected a JSON object, got an array");
        let error = from_str::<Outer>(r#"{"levle": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("unknown field `levle`"), "{error}");
    }
}
