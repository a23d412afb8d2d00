//! Compiles a JSON Schema into an arena of nodes, once per schema.
//!
//! Keywords are read the way TypeBox reads them: a keyword whose value has the wrong shape
//! (`"required": "a"`, `"minimum": "5"`) is ignored rather than rejected; keyword maps are visited
//! in JavaScript key order; `$ref`s are resolved against the root document at compile time, so
//! a recursive schema becomes a cycle in the arena rather than a recursion here (and nested
//! schemas are compiled from a work list, so depth costs no stack). Only what the root can reach
//! is compiled, so a broken regex in an unused `$defs` entry is harmless, as in
//! TypeBox.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::format;
use super::js::{self, number_of};
use super::js_regex::{Flags, JsRegex};

/// A string format's test.
pub(crate) type FormatCheck = fn(&str) -> bool;

/// Index of a node in [`Compiled::nodes`].
pub(crate) type NodeId = usize;

/// One schema location.
#[derive(Debug)]
pub(crate) enum Node {
    /// `true` or `false`.
    Bool(bool),
    /// A schema that constrains nothing (TypeBox evaluates an array used as a schema this way).
    Any,
    /// A schema object.
    Keywords(Box<Keywords>),
}

/// `type`: one name, or a list (reported as "either … or …").
#[derive(Debug)]
pub(crate) enum TypeSpec {
    One(String),
    Many(Vec<String>),
}

/// `dependencies` entries: required keys or a schema.
#[derive(Debug)]
pub(crate) enum Dependency {
    Keys(Vec<String>),
    Schema(NodeId),
}

/// `items`: one schema for every item, or one per position.
#[derive(Debug)]
pub(crate) enum Items {
    Every(NodeId),
    Tuple(Vec<NodeId>),
}

/// A `pattern` or `patternProperties` key with its source text (which messages quote).
#[derive(Debug)]
pub(crate) struct Pattern {
    pub(crate) source: String,
    pub(crate) regex: JsRegex,
}

/// The keywords of one schema object that validation understands.
#[derive(Debug, Default)]
pub(crate) struct Keywords {
    pub(crate) types: Option<TypeSpec>,
    pub(crate) required: Option<Vec<String>>,
    pub(crate) additional_properties: Option<NodeId>,
    pub(crate) dependencies: Vec<(String, Dependency)>,
    pub(crate) dependent_required: Vec<(String, Vec<String>)>,
    pub(crate) dependent_schemas: Vec<(String, NodeId)>,
    pub(crate) pattern_properties: Vec<(Pattern, NodeId)>,
    pub(crate) properties: Option<Vec<(String, NodeId)>>,
    /// The names in `properties`, for `additionalProperties`.
    pub(crate) property_set: HashSet<String>,
    pub(crate) property_names: Option<NodeId>,
    pub(crate) min_properties: Option<f64>,
    pub(crate) max_properties: Option<f64>,
    pub(crate) additional_items: Option<NodeId>,
    pub(crate) contains: Option<NodeId>,
    pub(crate) min_contains: Option<f64>,
    pub(crate) max_contains: Option<f64>,
    pub(crate) items: Option<Items>,
    pub(crate) min_items: Option<f64>,
    pub(crate) max_items: Option<f64>,
    pub(crate) prefix_items: Option<Vec<NodeId>>,
    pub(crate) unique_items: Option<bool>,
    pub(crate) min_length: Option<f64>,
    pub(crate) max_length: Option<f64>,
    /// The format name and its check (`None`: unknown to TypeBox, always passes).
    pub(crate) format: Option<(String, Option<FormatCheck>)>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) exclusive_minimum: Option<f64>,
    pub(crate) exclusive_maximum: Option<f64>,
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    pub(crate) multiple_of: Option<f64>,
    /// The `$ref` text and its target (`Node::Bool(false)` when it resolves to nothing).
    pub(crate) reference: Option<(String, NodeId)>,
    pub(crate) constant: Option<Value>,
    pub(crate) enumeration: Option<Vec<Value>>,
    /// `if`, `then` (or none), `else` (or none).
    pub(crate) conditional: Option<(NodeId, Option<NodeId>, Option<NodeId>)>,
    pub(crate) not: Option<NodeId>,
    pub(crate) all_of: Option<Vec<NodeId>>,
    pub(crate) any_of: Option<Vec<NodeId>>,
    pub(crate) one_of: Option<Vec<NodeId>>,
}

/// A compiled schema: the node arena and its root.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
}

impl Compiled {
    /// Compiles `schema` as a document root (`$ref`s resolve against it). The error says why the
    /// schema cannot be used.
    pub(crate) fn new(schema: &Value) -> Result<Self, String> {
        match schema {
            Value::Object(_) | Value::Array(_) => {}
            other => {
                return Err(format!(
                    "a tool schema must be a JSON object, not {}",
                    kind_of(other)
                ));
            }
        }
        let mut compiler = Compiler {
            root: schema,
            nodes: Vec::new(),
            compiled: HashMap::new(),
            pending: Vec::new(),
            unresolved: None,
        };
        let root = compiler.node(schema);
        while let Some((id, map)) = compiler.pending.pop() {
            let keywords = compiler.keywords(map)?;
            compiler.nodes[id] = Node::Keywords(Box::new(keywords));
        }
        Ok(Self {
            nodes: compiler.nodes,
            root,
        })
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_schema(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Bool(_))
}

fn number(map: &Map<String, Value>, key: &str) -> Option<f64> {
    map.get(key).and_then(Value::as_number).map(number_of)
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

struct Compiler<'s> {
    root: &'s Value,
    nodes: Vec<Node>,
    /// Schema locations already compiled, by address inside `root` (which outlives the
    /// compiler); what lets a `$ref` cycle close.
    compiled: HashMap<*const Value, NodeId>,
    /// Schema objects with a node id whose keywords are still to compile.
    pending: Vec<(NodeId, &'s Map<String, Value>)>,
    unresolved: Option<NodeId>,
}

impl<'s> Compiler<'s> {
    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The node for the schema at `value` (an object, a boolean, or an array treated as `{}`).
    /// An object is only queued here: [`Compiled::new`] compiles the queue in a loop, so deep
    /// schemas cost no stack.
    fn node(&mut self, value: &'s Value) -> NodeId {
        let key = value as *const Value;
        if let Some(&id) = self.compiled.get(&key) {
            return id;
        }
        let id = match value {
            Value::Bool(b) => self.push(Node::Bool(*b)),
            Value::Object(map) => {
                let id = self.push(Node::Any);
                self.pending.push((id, map));
                id
            }
            _ => self.push(Node::Any),
        };
        self.compiled.insert(key, id);
        id
    }

    /// Compiles each member of `list` when every member is a schema (TypeBox ignores the keyword
    /// otherwise).
    fn node_list(&mut self, list: Option<&'s Value>) -> Option<Vec<NodeId>> {
        let items = list.and_then(Value::as_array)?;
        if !items.iter().all(is_schema) {
            return None;
        }
        Some(items.iter().map(|item| self.node(item)).collect())
    }

    /// The nodes for each value of the object `map` when every value is a schema.
    fn node_map(&mut self, map: Option<&'s Value>) -> Option<Vec<(String, NodeId)>> {
        let map = map.and_then(Value::as_object)?;
        if !map.values().all(is_schema) {
            return None;
        }
        Some(
            js::entries(map)
                .into_iter()
                .map(|(key, value)| (key.clone(), self.node(value)))
                .collect(),
        )
    }

    fn optional_schema(&mut self, value: Option<&'s Value>) -> Option<NodeId> {
        value
            .filter(|value| is_schema(value))
            .map(|value| self.node(value))
    }

    fn keywords(&mut self, map: &'s Map<String, Value>) -> Result<Keywords, String> {
        let mut k = Keywords {
            types: match map.get("type") {
                Some(Value::String(name)) => Some(TypeSpec::One(name.clone())),
                Some(list @ Value::Array(_)) => strings(list).map(TypeSpec::Many),
                _ => None,
            },
            required: map.get("required").and_then(strings),
            additional_properties: self.optional_schema(map.get("additionalProperties")),
            ..Keywords::default()
        };
        if let Some(deps) = map.get("dependencies").and_then(Value::as_object) {
            let valid = deps
                .values()
                .all(|dep| is_schema(dep) || strings(dep).is_some());
            if valid {
                for (key, dep) in js::entries(deps) {
                    let dependency = match strings(dep) {
                        Some(keys) => Dependency::Keys(keys),
                        None => Dependency::Schema(self.node(dep)),
                    };
                    k.dependencies.push((key.clone(), dependency));
                }
            }
        }
        if let Some(deps) = map.get("dependentRequired").and_then(Value::as_object) {
            let lists: Option<Vec<(String, Vec<String>)>> = js::entries(deps)
                .into_iter()
                .map(|(key, dep)| strings(dep).map(|keys| (key.clone(), keys)))
                .collect();
            k.dependent_required = lists.unwrap_or_default();
        }
        k.dependent_schemas = self
            .node_map(map.get("dependentSchemas"))
            .unwrap_or_default();
        if let Some(patterns) = map.get("patternProperties").and_then(Value::as_object)
            && patterns.values().all(is_schema)
        {
            for (source, value) in js::entries(patterns) {
                let regex = JsRegex::new(source, Flags::UNICODE)?;
                let node = self.node(value);
                k.pattern_properties.push((
                    Pattern {
                        source: source.clone(),
                        regex,
                    },
                    node,
                ));
            }
        }
        k.properties = self.node_map(map.get("properties"));
        k.property_set = k
            .properties
            .iter()
            .flatten()
            .map(|(name, _)| name.clone())
            .collect();
        // TypeBox accepts any object here (arrays included) as well as booleans.
        k.property_names = match map.get("propertyNames") {
            Some(value @ (Value::Object(_) | Value::Array(_) | Value::Bool(_))) => {
                Some(self.node(value))
            }
            _ => None,
        };
        k.min_properties = number(map, "minProperties");
        k.max_properties = number(map, "maxProperties");
        k.additional_items = self.optional_schema(map.get("additionalItems"));
        k.contains = self.optional_schema(map.get("contains"));
        k.min_contains = number(map, "minContains");
        k.max_contains = number(map, "maxContains");
        k.items = match map.get("items") {
            Some(value) if is_schema(value) => Some(Items::Every(self.node(value))),
            Some(list @ Value::Array(_)) => self.node_list(Some(list)).map(Items::Tuple),
            _ => None,
        };
        k.min_items = number(map, "minItems");
        k.max_items = number(map, "maxItems");
        k.prefix_items = self.node_list(map.get("prefixItems"));
        k.unique_items = map.get("uniqueItems").and_then(Value::as_bool);
        k.min_length = number(map, "minLength");
        k.max_length = number(map, "maxLength");
        k.format = map
            .get("format")
            .and_then(Value::as_str)
            .map(|name| (name.to_owned(), format::checker(name)));
        if let Some(source) = map.get("pattern").and_then(Value::as_str) {
            k.pattern = Some(Pattern {
                source: source.to_owned(),
                regex: JsRegex::new(source, Flags::UNICODE)?,
            });
        }
        k.exclusive_minimum = number(map, "exclusiveMinimum");
        k.exclusive_maximum = number(map, "exclusiveMaximum");
        k.minimum = number(map, "minimum");
        k.maximum = number(map, "maximum");
        k.multiple_of = number(map, "multipleOf");
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            let target = match self.resolve(reference) {
                Some(target @ (Value::Object(_) | Value::Bool(_) | Value::Array(_))) => {
                    self.node(target)
                }
                Some(other) => {
                    return Err(format!(
                        "$ref \"{reference}\" points at {}, not a schema",
                        kind_of(other)
                    ));
                }
                None => self.unresolved(),
            };
            k.reference = Some((reference.to_owned(), target));
        }
        k.constant = map.get("const").cloned();
        k.enumeration = map.get("enum").and_then(Value::as_array).cloned();
        if let Some(condition) = self.optional_schema(map.get("if")) {
            let then = self.optional_schema(map.get("then"));
            let otherwise = self.optional_schema(map.get("else"));
            k.conditional = Some((condition, then, otherwise));
        }
        k.not = self.optional_schema(map.get("not"));
        k.all_of = self.node_list(map.get("allOf"));
        k.any_of = self.node_list(map.get("anyOf"));
        k.one_of = self.node_list(map.get("oneOf"));
        Ok(k)
    }

    /// The node every unresolvable `$ref` points at: TypeBox validates against `false`.
    fn unresolved(&mut self) -> NodeId {
        match self.unresolved {
            Some(id) => id,
            None => {
                let id = self.push(Node::Bool(false));
                self.unresolved = Some(id);
                id
            }
        }
    }

    /// Finds what `reference` points at inside the root document: `#`, a JSON pointer `#/…`
    /// (percent-decoded), an anchor `#name` (`$anchor`, or a draft-06 `$id: "#name"`), each
    /// optionally prefixed by the root's own `$id`. Anything else (another document) resolves
    /// to nothing.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let (base, fragment) = match reference.split_once('#') {
            Some((base, fragment)) => (base, Some(fragment)),
            None => (reference, None),
        };
        let root_id = self.root.get("$id").and_then(Value::as_str);
        if !base.is_empty() && Some(base) != root_id {
            return None;
        }
        let fragment = match fragment {
            None | Some("") => return Some(self.root),
            Some(fragment) => percent_decode(fragment)?,
        };
        if fragment.starts_with('/') {
            return self.root.pointer(&fragment);
        }
        find_anchor(self.root, &fragment)
    }
}

/// The last schema, in depth-first order, declaring `name` as its anchor (`$anchor`, or a
/// draft-06 `$id: "#name"`); a match's own subschemas are not searched, nor `const` and `enum`
/// (data, not schemas), as in TypeBox's resolver.
fn find_anchor<'s>(root: &'s Value, name: &str) -> Option<&'s Value> {
    let mut found = None;
    let mut stack = vec![root];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                let anchor = map.get("$anchor").and_then(Value::as_str) == Some(name);
                let id = map
                    .get("$id")
                    .and_then(Value::as_str)
                    .and_then(|id| id.strip_prefix('#'))
                    == Some(name);
                if anchor || id {
                    found = Some(value);
                    continue;
                }
                let children = js::entries(map);
                stack.extend(
                    children
                        .into_iter()
                        .rev()
                        .filter(|(key, _)| *key != "const" && *key != "enum")
                        .map(|(_, child)| child),
                );
            }
            Value::Array(items) => stack.extend(items.iter().rev()),
            _ => {}
        }
    }
    found
}

/// `decodeURIComponent`; `None` for a malformed escape.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
