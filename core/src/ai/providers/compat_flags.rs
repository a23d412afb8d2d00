//! Declaring a wire API's compat flags once: [`compat_flags!`] writes the resolved struct and
//! the reading of `model.compat` (each flag under its camelCase name) from one list.

/// Declares a `Compat` struct whose fields are the flags, and `Compat::with_overrides`, which
/// replaces every flag that a `model.compat` object sets. As in pi, an object that does not
/// read as the flags (a value of the wrong type) overrides nothing; `null` keeps the value.
macro_rules! compat_flags {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$field_meta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$field_meta])* pub $field: $ty ),*
        }

        impl $name {
            /// `self`, with every flag that `compat` (a model's `compat` object) sets.
            pub(crate) fn with_overrides(self, compat: Option<&serde_json::Value>) -> Self {
                /// The flags as written in `model.compat` (all optional).
                #[derive(Default, serde::Deserialize)]
                #[serde(rename_all = "camelCase", default)]
                struct Overrides {
                    $( $field: Option<$ty> ),*
                }
                let overrides: Overrides = compat
                    .filter(|value| value.is_object())
                    .and_then(|value| serde_json::from_value(serde_json::Value::clone(value)).ok())
                    .unwrap_or_default();
                Self {
                    $( $field: overrides.$field.unwrap_or(self.$field) ),*
                }
            }
        }
    };
}

pub(crate) use compat_flags;
