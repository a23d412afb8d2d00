//! Lenient typed views of streamed JSON chunks.
//!
//! Parsing every chunk into a `serde_json::Value` (an ordered map per object, an owned string
//! per key and value) was the largest cost per event. These wrappers let a provider deserialize
//! a chunk straight into a small struct that borrows its strings from the SSE buffer, while
//! keeping the forgiving reading of the `Value` code: a field of an unexpected type reads as
//! absent instead of failing the chunk.
//!
//! A struct deserialized through these wrappers can still fail on input the `Value` path
//! accepts (a duplicated key, raw control characters inside a string): providers fall back to
//! parsing a `Value` and reading the same struct from it, so the fast path never changes what a
//! chunk means.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Visitor methods that read every JSON scalar but a string as `$none`.
macro_rules! ignore_scalars {
    ($none:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// A string field: `Some` for a JSON string (borrowed when it has no escapes), `None` for any
/// other JSON value.
#[derive(Debug, Default)]
pub(crate) struct Str<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The string, if the field was one.
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Some(Cow::Owned(v))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Str(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| Str(None))
            }
            ignore_scalars!(Str(None));
        }
        deserializer.deserialize_any(StrVisitor(PhantomData))
    }
}

/// An unsigned integer field: `Some` for a JSON number that is a `u64`, `None` otherwise (as
/// `Value::as_u64`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct U64(pub(crate) Option<u64>);

impl<'de> Deserialize<'de> for U64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct U64Visitor;
        impl<'de> Visitor<'de> for U64Visitor {
            type Value = U64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(U64(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(U64(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(U64(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(U64(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(U64(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(U64(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(U64(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| U64(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| U64(None))
            }
        }
        deserializer.deserialize_any(U64Visitor)
    }
}

/// An object field read as `T`: `Some` for a JSON object, `None` for any other value.
#[derive(Debug)]
pub(crate) struct Object<T>(pub(crate) Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Object(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Object(None))
            }
            ignore_scalars!(Object(None));
        }
        deserializer.deserialize_any(ObjectVisitor(PhantomData))
    }
}

/// An array field whose elements are read as `T`: `Some` for a JSON array, `None` for any other
/// value.
#[derive(Debug)]
pub(crate) struct Array<T>(pub(crate) Option<Vec<T>>);

impl<T> Default for Array<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<T> Array<T> {
    /// The elements (none when the field was absent or not an array).
    pub(crate) fn items(&self) -> &[T] {
        self.0.as_deref().unwrap_or_default()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Array<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ArrayVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ArrayVisitor<T> {
            type Value = Array<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Array(Some(items)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| Array(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Array(None))
            }
            ignore_scalars!(Array(None));
        }
        deserializer.deserialize_any(ArrayVisitor(PhantomData))
    }
}

/// The first element of an array field, read as `T`, the others skipped: `None` for an empty
/// array or any other value. For a field whose reader only looks at its first element (a Chat
/// Completions chunk's `choices`): no `Vec` per chunk.
#[cfg(feature = "openai")]
#[derive(Debug)]
pub(crate) struct First<T>(pub(crate) Option<T>);

#[cfg(feature = "openai")]
impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

#[cfg(feature = "openai")]
impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for FirstVisitor<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| First(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(First(None))
            }
            ignore_scalars!(First(None));
        }
        deserializer.deserialize_any(FirstVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Debug, Deserialize)]
    struct Chunk<'a> {
        #[serde(default, borrow)]
        text: Str<'a>,
        #[serde(default)]
        index: U64,
        #[serde(default, borrow)]
        inner: Object<Inner<'a>>,
        #[serde(default, borrow)]
        list: Array<Object<Inner<'a>>>,
    }

    #[derive(Debug, Deserialize)]
    struct Inner<'a> {
        #[serde(default, borrow)]
        name: Str<'a>,
    }

    fn both(text: &str) -> Vec<Option<String>> {
        let read = |chunk: Chunk<'_>| {
            vec![
                chunk.text.get().map(str::to_owned),
                chunk.index.0.map(|n| n.to_string()),
                chunk
                    .inner
                    .0
                    .and_then(|inner| inner.name.get().map(str::to_owned)),
                Some(chunk.list.items().len().to_string()),
            ]
        };
        let fast = read(serde_json::from_str(text).expect("fast"));
        let value: Value = serde_json::from_str(text).expect("value");
        let slow = read(Chunk::deserialize(&value).expect("from value"));
        assert_eq!(fast, slow, "{text}");
        fast
    }

    #[test]
    fn wrong_types_read_as_absent() {
        assert_eq!(
            both(r#"{"text":"a\nb","index":3,"inner":{"name":"n"},"list":[{"name":1},2,"x"]}"#),
            [
                Some("a\nb".into()),
                Some("3".into()),
                Some("n".into()),
                Some("3".into())
            ]
        );
        assert_eq!(
            both(r#"{"text":{"a":[1]},"index":-1,"inner":[1],"list":{"a":1},"other":[{}]}"#),
            [None, None, None, Some("0".into())]
        );
        assert_eq!(
            both(r#"{"text":null,"index":1.5,"inner":"s","list":null}"#),
            [None, None, None, Some("0".into())]
        );
    }

    #[test]
    fn borrowed_when_unescaped() {
        let chunk: Chunk<'_> = serde_json::from_str(r#"{"text":"plain"}"#).expect("chunk");
        assert!(matches!(chunk.text.0, Some(Cow::Borrowed("plain"))));
    }
}
