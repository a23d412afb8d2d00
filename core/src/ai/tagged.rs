//! Reading internally tagged JSON (`{"role": "user", ...}`, `{"type": "text", ...}`) without
//! buffering it.
//!
//! serde's derived `#[serde(tag = "...")]` enums first copy the whole object into an
//! in-memory tree (every key and string allocated again), find the tag in it, then read the
//! variant from the copy: for a transcript that is every message and every content block
//! read twice. pi writes the tag first, so here the first key is looked at: when it is the
//! tag, the variant is read straight from the rest of the object. Only an object whose tag
//! comes later is buffered (as a `serde_json::Value`), which reads the same.
//!
//! Errors say what serde's derive says: ``missing field `role` `` and
//! ``unknown variant `x`, expected one of ...``.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// An internally tagged enum read by [`deserialize`].
pub(crate) trait Tagged: Sized {
    /// The tag's key.
    const TAG: &'static str;
    /// The tag's values, one per variant, in variant order.
    const VARIANTS: &'static [&'static str];
    /// What the value is, for errors (`"a message object"`).
    const EXPECTING: &'static str;

    /// Reads variant `index` (of [`VARIANTS`](Self::VARIANTS)) from the object's other keys.
    fn read_variant<'de, D: Deserializer<'de>>(index: usize, rest: D) -> Result<Self, D::Error>;

    /// Reads an object whose tag is none of [`VARIANTS`](Self::VARIANTS): an error, unless
    /// the type has an open set of tags.
    fn read_other<'de, D: Deserializer<'de>>(tag: String, rest: D) -> Result<Self, D::Error> {
        drop(rest);
        Err(de::Error::unknown_variant(&tag, Self::VARIANTS))
    }

    /// The error for an object without the tag.
    fn missing_tag<E: de::Error>() -> E {
        E::missing_field(Self::TAG)
    }
}

/// Implements `Deserialize` for [`Tagged`] types by [`deserialize`].
macro_rules! deserialize_tagged {
    ($($ty:ty),+ $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Self, D::Error> {
                $crate::ai::tagged::deserialize(deserializer)
            }
        }
    )+};
}
pub(crate) use deserialize_tagged;

/// A tag's value: one of the known variants, or another string.
enum Variant {
    Known(usize),
    Other(String),
}

impl Variant {
    fn read<'de, T: Tagged, D: Deserializer<'de>>(self, rest: D) -> Result<T, D::Error> {
        match self {
            Self::Known(index) => T::read_variant(index, rest),
            Self::Other(tag) => T::read_other(tag, rest),
        }
    }
}

/// Reads a `T` from an object, its variant chosen by its tag.
pub(crate) fn deserialize<'de, T: Tagged, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        match map.next_key_seed(FirstKey(T::TAG))? {
            None => Err(T::missing_tag()),
            Some(Key::Tag) => map
                .next_value_seed(VariantIndex::<T>(PhantomData))?
                .read(MapAccessDeserializer::new(map)),
            Some(Key::Other(first)) => buffered(first, map),
        }
    }
}

/// The rare object whose tag is not its first key: read whole, then dispatched.
fn buffered<'de, T: Tagged, A: MapAccess<'de>>(first: String, mut map: A) -> Result<T, A::Error> {
    let mut object = serde_json::Map::new();
    object.insert(first, map.next_value()?);
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        object.insert(key, value);
    }
    // `shift_remove`: `remove` swaps the last key into the tag's place, and a custom
    // message keeps its other keys in their order.
    let variant = match object.shift_remove(T::TAG) {
        None => return Err(T::missing_tag()),
        Some(tag) => VariantIndex::<T>(PhantomData)
            .deserialize(tag)
            .map_err(de::Error::custom)?,
    };
    variant
        .read(Value::Object(object))
        .map_err(de::Error::custom)
}

/// Reads the first key, told the tag's name.
struct FirstKey(&'static str);

/// What the first key was: the tag, or another key (kept for the buffered path).
enum Key {
    Tag,
    Other(String),
}

impl<'de> DeserializeSeed<'de> for FirstKey {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for FirstKey {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(if key == self.0 {
            Key::Tag
        } else {
            Key::Other(key.to_owned())
        })
    }
}

/// Reads a tag's value as its [`Variant`].
struct VariantIndex<T>(PhantomData<T>);

impl<'de, T: Tagged> DeserializeSeed<'de> for VariantIndex<T> {
    type Value = Variant;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Variant, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<T: Tagged> Visitor<'_> for VariantIndex<T> {
    type Value = Variant;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a string `{}`", T::TAG)
    }

    fn visit_str<E: de::Error>(self, tag: &str) -> Result<Variant, E> {
        Ok(
            match T::VARIANTS.iter().position(|variant| *variant == tag) {
                Some(index) => Variant::Known(index),
                None => Variant::Other(tag.to_owned()),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::ai::types::{AssistantContent, Message, UserContent, UserMessageContent};
    use serde_json::json;

    fn message(text: &str) -> Result<Message, String> {
        serde_json::from_str(text).map_err(|error| error.to_string())
    }

    #[test]
    fn the_tag_first_or_later_reads_the_same() {
        let first = message(
            r#"{"role":"user","content":[{"type":"text","text":"a"},
                {"type":"image","data":"QUJD","mimeType":"image/png"}],"timestamp":5}"#,
        )
        .unwrap();
        let later = message(
            r#"{"timestamp":5,"content":[{"text":"a","type":"text"},
                {"data":"QUJD","mimeType":"image/png","type":"image"}],"role":"user"}"#,
        )
        .unwrap();
        assert_eq!(first, later);
        let Message::User(user) = &first else {
            panic!("{first:?}")
        };
        let UserMessageContent::Blocks(blocks) = &user.content else {
            panic!("{user:?}")
        };
        assert!(matches!(blocks[1], UserContent::Image(_)));
        let call: AssistantContent =
            serde_json::from_str(r#"{"name":"f","type":"toolCall","id":"c","arguments":{"x":1}}"#)
                .unwrap();
        assert!(matches!(call, AssistantContent::ToolCall(ref c) if c.arguments["x"] == 1));
        // From a `Value` too (the buffered path's own reader).
        let value = json!({"content": "hi", "role": "user"});
        let user: Message = serde_json::from_value(value).unwrap();
        assert_eq!(user, message(r#"{"role":"user","content":"hi"}"#).unwrap());
    }

    #[test]
    fn errors_name_the_tag_and_the_variants() {
        let missing = message(r#"{"content":"hi"}"#).unwrap_err();
        assert!(missing.starts_with("missing field `role`"), "{missing}");
        assert!(
            message("{}")
                .unwrap_err()
                .starts_with("missing field `role`")
        );
        let unknown = message(r#"{"role":"system","content":"hi"}"#).unwrap_err();
        assert!(
            unknown.starts_with(
                "unknown variant `system`, expected one of `user`, `assistant`, `toolResult`"
            ),
            "{unknown}"
        );
        let later = message(r#"{"content":"hi","role":"system"}"#).unwrap_err();
        assert!(later.starts_with("unknown variant `system`"), "{later}");
        let block: Result<UserContent, _> = serde_json::from_str(r#"{"type":"video"}"#);
        assert!(
            block
                .unwrap_err()
                .to_string()
                .starts_with("unknown variant `video`, expected `text` or `image`")
        );
        let array = message(r#"["user","hi"]"#).unwrap_err();
        assert!(array.contains("expected a message object"), "{array}");
        // An error inside the variant keeps serde_json's position in the text.
        let inner = message(r#"{"role":"user","content":"hi","timestamp":"x"}"#).unwrap_err();
        assert!(inner.contains("line 1 column"), "{inner}");
    }

    #[test]
    fn user_content_is_a_string_or_blocks() {
        let text: UserMessageContent = serde_json::from_str(r#""hi""#).unwrap();
        assert_eq!(text, UserMessageContent::Text("hi".into()));
        let blocks: UserMessageContent =
            serde_json::from_str(r#"[{"type":"text","text":"a"}]"#).unwrap();
        assert_eq!(
            blocks,
            UserMessageContent::Blocks(vec![UserContent::text("a")])
        );
        let wrong = serde_json::from_str::<UserMessageContent>("5").unwrap_err();
        assert!(
            wrong
                .to_string()
                .contains("expected a string or an array of content blocks"),
            "{wrong}"
        );
    }
}
