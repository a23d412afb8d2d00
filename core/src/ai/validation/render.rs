//! `jsonschema`'s typed errors rendered as pi (TypeBox) reports them: AJV-style messages, pi's
//! dotted paths (`a.b.0.c`, `root` for the arguments object), TypeBox's order, at most eight.
//!
//! The crate reports each failing keyword once with where it failed (instance path) and how
//! the schema got there (evaluation path). TypeBox's order is a depth-first walk of the schema
//! in its own keyword order (`type`; the object keywords; the array keywords; the string
//! keywords; the number keywords; `$ref`, `const`, `enum`, `if`, `not`, `allOf`, `anyOf`,
//! `oneOf`), `properties` in the schema's key order and instance keys in JavaScript key order.
//! So each error gets a sort key from its evaluation path read against the schema and the
//! arguments, and the few summaries TypeBox adds after a group of errors (`must not have
//! additional properties`, `must match "else" schema`, `property names … are invalid`, the
//! `anyOf` / `oneOf` verdicts) are placed with keys that sort right after their group.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::{Map, Value};

use super::js::{self, number_to_string};

/// TypeBox's `maxErrors`: a report lists this many problems at most.
pub(crate) const MAX_ERRORS: usize = 8;

/// One line of the report: `  - <path>: <message>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// How an entry combines with the next one of the same key.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Merge {
    /// A plain line: a second one with the same key is the same line (a trailer).
    Once,
    /// `required`: one line naming every missing property, at the first one's path.
    Required {
        base: Vec<String>,
        missing: Vec<String>,
    },
    /// `propertyNames`' summary, naming every invalid key.
    Names {
        base: Vec<String>,
        names: Vec<(u32, String)>,
    },
    /// Lines that are kept as they are (one per error).
    Each,
}

#[derive(Debug)]
struct Entry {
    key: Vec<u32>,
    lines: Vec<Problem>,
    merge: Merge,
    first_item: Option<(Vec<u32>, u32)>,
}

/// TypeBox's keyword order (`Errors` in `typebox/value`); keywords it does not know come last.
fn rank(keyword: &str) -> u32 {
    const ORDER: [&str; 38] = [
        "type",
        "required",
        "additionalProperties",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "properties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "additionalItems",
        "contains",
        "items",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "prefixItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "format",
        "pattern",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minimum",
        "maximum",
        "multipleOf",
        "$ref",
        "const",
        "enum",
        "if",
        "then",
        "else",
        "not",
        "allOf",
        "anyOf",
    ];
    match keyword {
        "oneOf" => ORDER.len() as u32,
        _ => ORDER
            .iter()
            .position(|k| *k == keyword)
            .map_or(ORDER.len() as u32 + 1, |i| i as u32),
    }
}

/// pi's path: the segments (keys escaped as in a JSON pointer) joined by dots, `root` when
/// that is empty.
fn render_path(path: &[String]) -> String {
    let joined = path.join(".");
    if joined.is_empty() {
        "root".to_owned()
    } else {
        joined
    }
}

/// A key as a path segment (`~` and `/` escaped as in a JSON pointer).
fn escaped(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The segments of a JSON pointer, unescaped (empty keys kept).
fn pointer_segments(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer
        .strip_prefix('/')
        .unwrap_or(pointer)
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The positions of objects' keys in JavaScript order, each object's computed once: a report
/// asks for a position per error, and an object of N unexpected keys makes N errors (or one
/// listing N keys), so ordering the object's keys at each question made the report quadratic
/// (minutes for 20,000 keys).
#[derive(Default)]
struct Positions<'v>(RefCell<HashMap<*const Map<String, Value>, KeyPositions<'v>>>);

/// One object's keys and their positions.
type KeyPositions<'v> = HashMap<&'v str, u32>;

impl<'v> Positions<'v> {
    /// The position of `key` among `map`'s keys in JavaScript order (0 when absent).
    fn of(&self, map: Option<&'v Value>, key: &str) -> u32 {
        let Some(map) = map.and_then(Value::as_object) else {
            return 0;
        };
        let mut cache = self.0.borrow_mut();
        let positions = cache.entry(std::ptr::from_ref(map)).or_insert_with(|| {
            js::entries(map)
                .into_iter()
                .enumerate()
                .map(|(index, (key, _))| (key.as_str(), index as u32))
                .collect()
        });
        positions.get(key).copied().unwrap_or(0)
    }
}

/// What `reference` points at inside `root` (`#`, `#/json/pointer`, `#anchor`), if anything.
pub(crate) fn resolve<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    let fragment = reference.split_once('#').map_or("", |(_, f)| f);
    if fragment.is_empty() {
        return Some(root);
    }
    if fragment.starts_with('/') {
        let decoded = percent_decode(fragment);
        return root.pointer(&decoded);
    }
    let mut stack = vec![root];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                if map.get("$anchor").and_then(Value::as_str) == Some(fragment) {
                    return Some(value);
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    None
}

/// `decodeURIComponent` for the `%xx` escapes of a pointer fragment (malformed ones stay).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where an error sits: its sort key, the instance path walked so far, and the schema object
/// holding the failing keyword.
struct Walk<'v> {
    key: Vec<u32>,
    schema: Option<&'v Value>,
    path: Vec<String>,
    instance: Option<&'v Value>,
    /// Under `additionalItems`: its key and the item's index (TypeBox reports only the first
    /// failing additional item).
    first_item: Option<(Vec<u32>, u32)>,
}

/// What the walk met on its way that changes how the error is reported.
enum Special {
    /// The error is inside a `then`: TypeBox reports only `must match "then" schema`.
    Then,
    /// The error is a missing property of a `dependencies` / `dependentRequired` list (the
    /// keyword).
    Dependency(String),
}

struct Renderer<'v, 'p> {
    root: &'v Value,
    instance: &'v Value,
    entries: Vec<Entry>,
    positions: &'p Positions<'v>,
}

impl<'v> Renderer<'v, '_> {
    /// Walks `error`'s evaluation path; trailers met on the way are added as entries.
    fn walk(&mut self, error: &ValidationError<'_>) -> (Walk<'v>, Option<Special>) {
        let positions = self.positions;
        let evaluation = pointer_segments(error.evaluation_path().as_str());
        let instance_path = pointer_segments(error.instance_path().as_str());
        let mut instance_steps = instance_path.into_iter();
        let mut walk = Walk {
            key: Vec::new(),
            schema: Some(self.root),
            path: Vec::new(),
            instance: Some(self.instance),
            first_item: None,
        };
        let mut segments = evaluation.into_iter().peekable();
        while let Some(keyword) = segments.next() {
            walk.key.push(rank(&keyword));
            let here = walk.schema;
            let sub = |name: &str| here.and_then(|s| s.get(name));
            let mut step_instance = |walk: &mut Walk<'v>| {
                if let Some(step) = instance_steps.next() {
                    walk.key.push(match walk.instance {
                        Some(object @ Value::Object(_)) => positions.of(Some(object), &step),
                        _ => step.parse().unwrap_or(0),
                    });
                    walk.instance = walk.instance.and_then(|value| match value {
                        Value::Object(map) => map.get(&step),
                        Value::Array(items) => {
                            step.parse::<usize>().ok().and_then(|i| items.get(i))
                        }
                        _ => None,
                    });
                    walk.path.push(escaped(&step));
                }
            };
            match keyword.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" | "$defs"
                | "definitions" => {
                    let name = segments.next().unwrap_or_default();
                    walk.key.push(positions.of(sub(&keyword), &name));
                    walk.schema = sub(&keyword).and_then(|m| m.get(&name));
                    if keyword == "properties" || keyword == "patternProperties" {
                        step_instance(&mut walk);
                    }
                }
                "dependencies" | "dependentRequired" if segments.peek().is_none() => {
                    // A list entry: the crate names only the missing property.
                    walk.schema = here;
                    return (walk, Some(Special::Dependency(keyword)));
                }
                "dependencies" => {
                    let name = segments.next().unwrap_or_default();
                    walk.key.push(positions.of(sub(&keyword), &name));
                    walk.schema = sub(&keyword).and_then(|m| m.get(&name));
                }
                "items" | "prefixItems" => {
                    if let Some(Value::Array(list)) = sub(&keyword) {
                        let index: usize =
                            segments.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                        walk.schema = list.get(index);
                    } else {
                        walk.schema = sub(&keyword);
                    }
                    step_instance(&mut walk);
                }
                "additionalProperties" => {
                    self.trailer(&walk, "must not have additional properties");
                    walk.schema = sub(&keyword);
                    step_instance(&mut walk);
                }
                "additionalItems" => {
                    walk.schema = sub(&keyword);
                    let prefix = walk.key.clone();
                    step_instance(&mut walk);
                    let index = walk.key.last().copied().unwrap_or(0);
                    walk.first_item = Some((prefix, index));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let index: usize = segments.next().and_then(|s| s.parse().ok()).unwrap_or(0);
                    walk.key.push(index as u32);
                    walk.schema = sub(&keyword).and_then(|list| list.get(index));
                }
                "then" => {
                    walk.schema = here;
                    return (walk, Some(Special::Then));
                }
                "else" => {
                    self.trailer(&walk, "must match \"else\" schema");
                    walk.schema = sub(&keyword);
                }
                "not" | "if" | "contains" | "propertyNames" => walk.schema = sub(&keyword),
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    walk.schema = sub(&keyword)
                        .and_then(Value::as_str)
                        .and_then(|reference| resolve(self.root, reference));
                }
                _ => {
                    // The failing keyword itself; what follows names its parts.
                    walk.schema = here;
                    break;
                }
            }
        }
        walk.path.extend(instance_steps.map(|step| escaped(&step)));
        (walk, None)
    }

    /// A summary line TypeBox adds after the errors of the keyword just pushed on `walk`.
    fn trailer(&mut self, walk: &Walk<'v>, message: &str) {
        let mut key = walk.key.clone();
        key.push(u32::MAX);
        self.entries.push(Entry {
            key,
            lines: vec![Problem {
                path: render_path(&walk.path),
                message: message.to_owned(),
            }],
            merge: Merge::Once,
            first_item: None,
        });
    }

    fn add(&mut self, error: &ValidationError<'_>) {
        let positions = self.positions;
        let (walk, special) = self.walk(error);
        let line = |path: &[String], message: String| Problem {
            path: render_path(path),
            message,
        };
        let mut entry = Entry {
            key: walk.key.clone(),
            lines: Vec::new(),
            merge: Merge::Each,
            first_item: walk.first_item.clone(),
        };
        match special {
            Some(Special::Then) => {
                entry
                    .lines
                    .push(line(&walk.path, "must match \"then\" schema".to_owned()));
                entry.merge = Merge::Once;
                self.entries.push(entry);
                return;
            }
            Some(Special::Dependency(keyword)) => {
                let ValidationErrorKind::Required { property } = error.kind() else {
                    return;
                };
                let present = |key: &str| walk.instance.and_then(|i| i.get(key)).is_some();
                // The first present key whose list names the missing property.
                let lists = walk
                    .schema
                    .and_then(|s| s.get(&keyword))
                    .and_then(Value::as_object);
                let Some((index, name, keys)) = lists.and_then(|lists| {
                    js::entries(lists)
                        .into_iter()
                        .enumerate()
                        .find_map(|(index, (name, keys))| {
                            let keys = keys.as_array()?;
                            (present(name) && keys.contains(property))
                                .then_some((index, name, keys))
                        })
                }) else {
                    return;
                };
                entry.key.push(index as u32);
                let list: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
                // `dependencies` stops at a key's first missing property; `dependentRequired`
                // reports each missing one.
                if keyword == "dependencies" {
                    entry.merge = Merge::Once;
                } else {
                    entry.key.push(
                        keys.iter()
                            .position(|k| k == property)
                            .map_or(0, |i| i as u32),
                    );
                }
                entry.lines.push(line(
                    &walk.path,
                    format!(
                        "must have properties {} when property {name} is present",
                        list.join(", ")
                    ),
                ));
                self.entries.push(entry);
                return;
            }
            None => {}
        }
        let path = walk.path.clone();
        let schema = walk.schema;
        let message = match error.kind() {
            ValidationErrorKind::Required { property } => {
                let base: Vec<String> = path.clone();
                entry.merge = Merge::Required {
                    base,
                    missing: vec![property.as_str().unwrap_or_default().to_owned()],
                };
                self.entries.push(entry);
                return;
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let mut keys: Vec<&String> = unexpected.iter().collect();
                let order = walk.instance;
                keys.sort_by_key(|key| positions.of(order, key));
                for key in keys {
                    let mut at = path.clone();
                    at.push(escaped(key));
                    let mut key_path = walk.key.clone();
                    key_path.push(positions.of(order, key));
                    self.entries.push(Entry {
                        key: key_path,
                        lines: vec![line(&at, "schema is false".to_owned())],
                        merge: Merge::Each,
                        first_item: None,
                    });
                }
                let mut key = walk.key.clone();
                key.push(u32::MAX);
                self.entries.push(Entry {
                    key,
                    lines: vec![line(
                        &path,
                        "must not have additional properties".to_owned(),
                    )],
                    merge: Merge::Once,
                    first_item: None,
                });
                return;
            }
            ValidationErrorKind::AdditionalItems { limit } => {
                let mut at = path.clone();
                at.push(limit.to_string());
                entry.lines.push(line(&at, "schema is false".to_owned()));
                self.entries.push(entry);
                return;
            }
            ValidationErrorKind::PropertyNames { error: inner } => {
                let name = inner.instance().as_str().unwrap_or_default().to_owned();
                let mut at = path.clone();
                at.push(escaped(&name));
                entry.key.push(positions.of(walk.instance, &name));
                entry.lines.push(line(&at, message(inner.kind(), None)));
                self.entries.push(entry);
                let mut key = walk.key.clone();
                key.push(u32::MAX);
                self.entries.push(Entry {
                    key,
                    lines: Vec::new(),
                    merge: Merge::Names {
                        base: path,
                        names: vec![(positions.of(walk.instance, &name), name)],
                    },
                    first_item: None,
                });
                return;
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                for branch in context {
                    let mut nested = Renderer {
                        root: self.root,
                        instance: self.instance,
                        entries: Vec::new(),
                        positions,
                    };
                    for error in branch {
                        nested.add(error);
                    }
                    let mut lines = nested.finish();
                    lines.truncate(MAX_ERRORS);
                    entry.lines.extend(lines);
                }
                message(error.kind(), schema)
            }
            kind => message(kind, schema),
        };
        entry.lines.push(line(&path, message));
        self.entries.push(entry);
    }

    /// The lines in TypeBox's order, merged, at most eight.
    fn finish(mut self) -> Vec<Problem> {
        let firsts: Vec<(Vec<u32>, u32)> = self
            .entries
            .iter()
            .filter_map(|entry| entry.first_item.clone())
            .collect();
        self.entries.retain(|entry| {
            entry
                .first_item
                .as_ref()
                .is_none_or(|(prefix, index)| firsts.iter().all(|(p, i)| p != prefix || i >= index))
        });
        self.entries.sort_by(|a, b| a.key.cmp(&b.key));
        let mut merged: Vec<Entry> = Vec::new();
        for entry in self.entries {
            if let Some(last) = merged.last_mut()
                && last.key == entry.key
            {
                match (&mut last.merge, entry.merge) {
                    (Merge::Once, Merge::Once) => continue,
                    (Merge::Required { missing, .. }, Merge::Required { missing: more, .. }) => {
                        missing.extend(more);
                        continue;
                    }
                    (Merge::Names { names, .. }, Merge::Names { names: more, .. }) => {
                        for name in more {
                            if !names.contains(&name) {
                                names.push(name);
                            }
                        }
                        continue;
                    }
                    (_, merge) => merged.push(Entry { merge, ..entry }),
                }
            } else {
                merged.push(entry);
            }
        }
        let mut out = Vec::new();
        for entry in merged {
            match entry.merge {
                Merge::Required { base, missing } => {
                    let mut at = base;
                    if let Some(first) = missing.first().filter(|first| !first.is_empty()) {
                        at.push(first.clone());
                    }
                    out.push(Problem {
                        path: render_path(&at),
                        message: format!("must have required properties {}", missing.join(", ")),
                    });
                }
                Merge::Names { base, mut names } => {
                    names.sort();
                    let names: Vec<String> = names.into_iter().map(|(_, name)| name).collect();
                    out.push(Problem {
                        path: render_path(&base),
                        message: format!("property names {} are invalid", names.join(", ")),
                    });
                }
                Merge::Once | Merge::Each => out.extend(entry.lines),
            }
            if out.len() >= MAX_ERRORS {
                break;
            }
        }
        out.truncate(MAX_ERRORS);
        out
    }
}

/// A number limit as JavaScript prints it.
fn number(value: &Value) -> String {
    value
        .as_f64()
        .map_or_else(|| value.to_string(), number_to_string)
}

/// The AJV-style message of one error kind. `schema` is the schema object holding the keyword
/// (for `type` lists in their written order, and pattern sources as written).
fn message(kind: &ValidationErrorKind, schema: Option<&Value>) -> String {
    use ValidationErrorKind as K;
    match kind {
        K::Type { kind } => match schema.and_then(|s| s.get("type")) {
            Some(Value::String(name)) => format!("must be {name}"),
            Some(Value::Array(names)) => {
                let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
                format!("must be either {}", names.join(" or "))
            }
            _ => match kind {
                TypeKind::Single(name) => format!("must be {name}"),
                TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
                    format!("must be either {}", names.join(" or "))
                }
            },
        },
        K::FalseSchema => "schema is false".to_owned(),
        K::Constant { .. } => "must be equal to constant".to_owned(),
        K::Enum { .. } => "must be equal to one of the allowed values".to_owned(),
        K::Minimum { limit } => format!("must be >= {}", number(limit)),
        K::Maximum { limit } => format!("must be <= {}", number(limit)),
        K::ExclusiveMinimum { limit } => format!("must be > {}", number(limit)),
        K::ExclusiveMaximum { limit } => format!("must be < {}", number(limit)),
        K::MultipleOf { multiple_of } => {
            format!("must be multiple of {}", number_to_string(*multiple_of))
        }
        K::MinLength { limit } => format!("must not have fewer than {limit} characters"),
        K::MaxLength { limit } => format!("must not have more than {limit} characters"),
        K::MinItems { limit } => format!("must not have fewer than {limit} items"),
        K::MaxItems { limit } => format!("must not have more than {limit} items"),
        K::MinProperties { limit } => format!("must not have fewer than {limit} properties"),
        K::MaxProperties { limit } => format!("must not have more than {limit} properties"),
        K::Pattern { pattern } => {
            let source = schema
                .and_then(|s| s.get("pattern"))
                .and_then(Value::as_str)
                .unwrap_or(pattern);
            format!("must match pattern \"{source}\"")
        }
        K::BacktrackLimitExceeded { .. } | K::RegexEngineFailure { .. } => {
            let source = schema
                .and_then(|s| s.get("pattern"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            format!("must match pattern \"{source}\"")
        }
        K::Format { format } => format!("must match format \"{format}\""),
        K::UniqueItems => "must not have duplicate items".to_owned(),
        K::Contains => "must contain at least 1 valid item".to_owned(),
        K::Not { .. } => "must not be valid".to_owned(),
        K::AnyOf { .. } => "must match a schema in anyOf".to_owned(),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => {
            "must match exactly one schema in oneOf".to_owned()
        }
        K::Required { property } => format!(
            "must have required properties {}",
            property.as_str().unwrap_or_default()
        ),
        K::AdditionalProperties { .. } => "must not have additional properties".to_owned(),
        K::AdditionalItems { .. } => "schema is false".to_owned(),
        K::PropertyNames { error } => message(error.kind(), None),
        K::UnevaluatedProperties { .. } => "must not have unevaluated properties".to_owned(),
        K::UnevaluatedItems { .. } => "must not have unevaluated items".to_owned(),
        K::ContentEncoding { content_encoding } => {
            format!("must match content encoding \"{content_encoding}\"")
        }
        K::ContentMediaType { content_media_type } => {
            format!("must match content media type \"{content_media_type}\"")
        }
        K::FromUtf8 { .. } => "must be valid UTF-8 once decoded".to_owned(),
        K::Custom { message, .. } => message.clone(),
        K::Referencing(error) => {
            let mut text = String::new();
            let _ = write!(text, "cannot be checked: {error}");
            text
        }
    }
}

/// The report lines for `errors` of `instance` against `root`, as pi prints them.
pub(crate) fn problems<'e>(
    root: &Value,
    instance: &Value,
    errors: impl Iterator<Item = ValidationError<'e>>,
) -> Vec<Problem> {
    let positions = Positions::default();
    let mut renderer = Renderer {
        root,
        instance,
        entries: Vec::new(),
        positions: &positions,
    };
    for error in errors {
        renderer.add(&error);
    }
    renderer.finish()
}
