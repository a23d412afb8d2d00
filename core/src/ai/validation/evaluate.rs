//! Evaluates a value against a compiled schema, either as a yes/no check (TypeBox's
//! `Check`, short-circuiting) or collecting errors the way TypeBox's `Errors` does: every keyword
//! of a schema is evaluated in TypeBox's order (`type`; the object keywords; the array keywords;
//! the string keywords; the number keywords; `$ref`, `const`, `enum`, `if`, `not`, `allOf`,
//! `anyOf`, `oneOf`), each error context keeps at most eight errors, and `allOf` / `anyOf` /
//! `oneOf` / `$ref` evaluate their subschemas in fresh contexts whose errors are kept only when
//! the keyword fails.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::Value;

use super::js::{self, number_of, number_to_string};
use super::schema::{Compiled, Dependency, Items, Keywords, Node, NodeId, TypeSpec};

/// TypeBox's `maxErrors` setting: each error context keeps this many errors.
const MAX_ERRORS: usize = 8;

/// How deeply evaluation may nest (schema levels, `$ref`s included) before it gives up; real
/// arguments stay far below (a 128-level JSON document through a recursive schema needs ~400).
pub(crate) const MAX_EVAL_DEPTH: usize = 1000;

/// Why evaluation stopped without an answer.
#[derive(Debug)]
pub(crate) enum Fault {
    /// A `$ref` led back to itself on the same value: the schema can never finish (TypeBox
    /// overflows the call stack here).
    Loop(String),
    /// The value and schema nest deeper than [`MAX_EVAL_DEPTH`].
    TooDeep,
}

/// One validation error, as pi prints it: `  - <path>: <message>`.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

/// A step in the instance path.
enum Segment {
    Key(String),
    Index(usize),
}

/// One evaluation of one value.
pub(crate) struct Evaluation<'c> {
    compiled: &'c Compiled,
    /// Collecting errors (TypeBox's `Errors`) rather than only checking (`Check`).
    collect: bool,
    path: Vec<Segment>,
    /// Error contexts; the last is the current one.
    contexts: Vec<Vec<Problem>>,
    /// `$ref` targets being evaluated, with the address of the value each is applied to.
    active: Vec<(NodeId, *const Value)>,
    depth: usize,
}

impl<'c> Evaluation<'c> {
    /// A fresh evaluation against `compiled`.
    pub(crate) fn new(compiled: &'c Compiled) -> Self {
        Self {
            compiled,
            collect: false,
            path: Vec::new(),
            contexts: vec![Vec::new()],
            active: Vec::new(),
            depth: 0,
        }
    }

    /// Whether `value` is valid.
    pub(crate) fn check(mut self, value: &Value) -> Result<bool, Fault> {
        self.collect = false;
        self.eval(self.compiled.root, value)
    }

    /// The errors for `value` (at most eight, in TypeBox's order).
    pub(crate) fn errors(mut self, value: &Value) -> Result<Vec<Problem>, Fault> {
        self.collect = true;
        self.eval(self.compiled.root, value)?;
        Ok(self.contexts.pop().unwrap_or_default())
    }

    fn add(&mut self, problem: Problem) {
        if let Some(context) = self.contexts.last_mut()
            && context.len() < MAX_ERRORS
        {
            context.push(problem);
        }
    }

    /// Records `message` at the current path; always `false`, the keyword's verdict.
    fn fail(&mut self, message: impl FnOnce() -> String) -> bool {
        if self.collect {
            let path = self.render_path();
            let path = if path.is_empty() {
                "root".to_owned()
            } else {
                path
            };
            self.add(Problem {
                path,
                message: message(),
            });
        }
        false
    }

    /// The path as pi prints it: keys (with `~` and `/` escaped as in a JSON pointer) and
    /// indices joined by dots.
    fn render_path(&self) -> String {
        let mut out = String::new();
        for (index, segment) in self.path.iter().enumerate() {
            if index > 0 {
                out.push('.');
            }
            match segment {
                Segment::Key(key) => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
                Segment::Index(i) => {
                    let _ = write!(out, "{i}");
                }
            }
        }
        out
    }

    /// Runs `f` in a fresh error context and returns its verdict and errors.
    fn fresh(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<bool, Fault>,
    ) -> Result<(bool, Vec<Problem>), Fault> {
        if !self.collect {
            return f(self).map(|ok| (ok, Vec::new()));
        }
        self.contexts.push(Vec::new());
        let result = f(self);
        let problems = self.contexts.pop().unwrap_or_default();
        result.map(|ok| (ok, problems))
    }

    /// Runs `f` as a plain check, even while collecting errors.
    fn quietly(&mut self, f: impl FnOnce(&mut Self) -> Result<bool, Fault>) -> Result<bool, Fault> {
        let collect = std::mem::replace(&mut self.collect, false);
        let result = f(self);
        self.collect = collect;
        result
    }

    /// Evaluates `node` on the child `value` at `segment`.
    fn child(
        &mut self,
        segment: impl FnOnce() -> Segment,
        node: NodeId,
        value: &Value,
    ) -> Result<bool, Fault> {
        if !self.collect {
            return self.eval(node, value);
        }
        self.path.push(segment());
        let result = self.eval(node, value);
        self.path.pop();
        result
    }

    pub(crate) fn eval(&mut self, node: NodeId, value: &Value) -> Result<bool, Fault> {
        if self.depth >= MAX_EVAL_DEPTH {
            return Err(Fault::TooDeep);
        }
        let compiled = self.compiled;
        let Some(node_ref) = compiled.nodes.get(node) else {
            return Ok(true);
        };
        match node_ref {
            Node::Any => Ok(true),
            Node::Bool(true) => Ok(true),
            Node::Bool(false) => Ok(self.fail(|| "schema is false".to_owned())),
            Node::Keywords(keywords) => {
                self.depth += 1;
                let result = self.keywords(keywords, value);
                self.depth -= 1;
                result
            }
        }
    }

    fn keywords(&mut self, k: &Keywords, value: &Value) -> Result<bool, Fault> {
        let mut valid = true;
        // Records a keyword's verdict; a plain check stops at the first failure.
        macro_rules! verdict {
            ($ok:expr) => {
                if !$ok {
                    valid = false;
                    if !self.collect {
                        return Ok(false);
                    }
                }
            };
        }
        if let Some(types) = &k.types {
            let ok = match types {
                TypeSpec::One(name) => type_matches(name, value),
                TypeSpec::Many(names) => names.iter().any(|name| type_matches(name, value)),
            };
            verdict!(
                ok || self.fail(|| match types {
                    TypeSpec::One(name) => format!("must be {name}"),
                    TypeSpec::Many(names) => format!("must be either {}", names.join(" or ")),
                })
            );
        }
        match value {
            Value::Object(_) => verdict!(self.object_keywords(k, value)?),
            Value::Array(items) => verdict!(self.array_keywords(k, items)?),
            Value::String(text) => verdict!(self.string_keywords(k, text)),
            Value::Number(n) => verdict!(self.number_keywords(k, number_of(n))),
            _ => {}
        }
        if let Some((reference, target)) = &k.reference {
            let key = (*target, value as *const Value);
            if self.active.contains(&key) {
                return Err(Fault::Loop(reference.clone()));
            }
            self.active.push(key);
            let result = self.fresh(|s| s.eval(*target, value));
            self.active.pop();
            let (ok, problems) = result?;
            if !ok {
                problems.into_iter().for_each(|p| self.add(p));
            }
            verdict!(ok);
        }
        if let Some(constant) = &k.constant {
            verdict!(js_equal(constant, value) || self.fail(|| "must be equal to constant".into()));
        }
        if let Some(options) = &k.enumeration {
            verdict!(
                options.iter().any(|option| js_equal(option, value))
                    || self.fail(|| "must be equal to one of the allowed values".into())
            );
        }
        if let Some((condition, then, otherwise)) = k.conditional {
            let (holds, _) = self.fresh(|s| s.eval(condition, value))?;
            let ok = if holds {
                let ok = match then {
                    Some(then) => self.fresh(|s| s.eval(then, value))?.0,
                    None => true,
                };
                ok || self.fail(|| "must match \"then\" schema".into())
            } else {
                let ok = match otherwise {
                    Some(otherwise) => self.eval(otherwise, value)?,
                    None => true,
                };
                ok || self.fail(|| "must match \"else\" schema".into())
            };
            verdict!(ok);
        }
        if let Some(not) = k.not {
            let matched = self.quietly(|s| s.eval(not, value))?;
            verdict!(!matched || self.fail(|| "must not be valid".into()));
        }
        if let Some(all) = &k.all_of {
            let mut failed = Vec::new();
            for &branch in all {
                let (ok, problems) = self.fresh(|s| s.eval(branch, value))?;
                if !ok {
                    if !self.collect {
                        return Ok(false);
                    }
                    failed.push(problems);
                }
            }
            if !failed.is_empty() {
                failed.into_iter().flatten().for_each(|p| self.add(p));
                valid = false;
            }
        }
        if let Some(any) = &k.any_of {
            let mut failed = Vec::new();
            let mut matched = false;
            for &branch in any {
                let (ok, problems) = self.fresh(|s| s.eval(branch, value))?;
                if ok {
                    matched = true;
                    if !self.collect {
                        break;
                    }
                } else {
                    failed.push(problems);
                }
            }
            if !matched {
                failed.into_iter().flatten().for_each(|p| self.add(p));
            }
            verdict!(matched || self.fail(|| "must match a schema in anyOf".into()));
        }
        if let Some(one) = &k.one_of {
            let mut failed = Vec::new();
            let mut passed = 0;
            for &branch in one {
                let (ok, problems) = self.fresh(|s| s.eval(branch, value))?;
                if ok {
                    passed += 1;
                    if passed > 1 && !self.collect {
                        break;
                    }
                } else {
                    failed.push(problems);
                }
            }
            if passed == 0 {
                failed.into_iter().flatten().for_each(|p| self.add(p));
            }
            verdict!(passed == 1 || self.fail(|| "must match exactly one schema in oneOf".into()));
        }
        Ok(valid)
    }

    fn object_keywords(&mut self, k: &Keywords, value: &Value) -> Result<bool, Fault> {
        let Value::Object(map) = value else {
            return Ok(true);
        };
        let mut valid = true;
        macro_rules! verdict {
            ($ok:expr) => {
                if !$ok {
                    valid = false;
                    if !self.collect {
                        return Ok(false);
                    }
                }
            };
        }
        if let Some(required) = &k.required {
            let missing: Vec<&String> = required
                .iter()
                .filter(|key| !map.contains_key(*key))
                .collect();
            if !missing.is_empty() {
                if self.collect {
                    // pi appends the first missing property to the path.
                    let base = self.render_path();
                    let path = match (base.is_empty(), missing[0].is_empty()) {
                        (_, true) if base.is_empty() => "root".to_owned(),
                        (_, true) => base,
                        (true, false) => missing[0].clone(),
                        (false, false) => format!("{base}.{}", missing[0]),
                    };
                    let list: Vec<&str> = missing.iter().map(|key| key.as_str()).collect();
                    self.add(Problem {
                        path,
                        message: format!("must have required properties {}", list.join(", ")),
                    });
                }
                verdict!(false);
            }
        }
        if let Some(additional) = k.additional_properties {
            let mut extra: Vec<&String> = Vec::new();
            for (key, item) in js::entries(map) {
                let known = k
                    .properties
                    .as_ref()
                    .is_some_and(|props| props.iter().any(|(name, _)| name == key))
                    || k.pattern_properties
                        .iter()
                        .any(|(p, _)| p.regex.is_match(key));
                if !known && !self.child(|| Segment::Key(key.clone()), additional, item)? {
                    extra.push(key);
                    if !self.collect {
                        break;
                    }
                }
            }
            verdict!(
                extra.is_empty() || self.fail(|| "must not have additional properties".into())
            );
        }
        for (key, dependency) in &k.dependencies {
            if !map.contains_key(key) {
                continue;
            }
            match dependency {
                Dependency::Keys(keys) => {
                    if keys.iter().any(|dep| !map.contains_key(dep)) {
                        verdict!(self.fail(|| format!(
                            "must have properties {} when property {key} is present",
                            keys.join(", ")
                        )));
                    }
                }
                Dependency::Schema(node) => verdict!(self.eval(*node, value)?),
            }
        }
        for (key, keys) in &k.dependent_required {
            if !map.contains_key(key) {
                continue;
            }
            for dep in keys {
                if !map.contains_key(dep) {
                    verdict!(self.fail(|| format!(
                        "must have properties {} when property {key} is present",
                        keys.join(", ")
                    )));
                }
            }
        }
        for (key, node) in &k.dependent_schemas {
            if map.contains_key(key) {
                verdict!(self.eval(*node, value)?);
            }
        }
        if !k.pattern_properties.is_empty() {
            let entries = js::entries(map);
            for (pattern, node) in &k.pattern_properties {
                for (key, item) in &entries {
                    if pattern.regex.is_match(key) {
                        verdict!(self.child(|| Segment::Key((*key).clone()), *node, item)?);
                    }
                }
            }
        }
        if let Some(properties) = &k.properties {
            for (key, node) in properties {
                if let Some(item) = map.get(key) {
                    verdict!(self.child(|| Segment::Key(key.clone()), *node, item)?);
                }
            }
        }
        if let Some(names) = k.property_names {
            let mut invalid: Vec<&String> = Vec::new();
            for (key, _) in js::entries(map) {
                let name = Value::String(key.clone());
                if !self.child(|| Segment::Key(key.clone()), names, &name)? {
                    invalid.push(key);
                    if !self.collect {
                        break;
                    }
                }
            }
            verdict!(
                invalid.is_empty()
                    || self.fail(|| {
                        let list: Vec<&str> = invalid.iter().map(|key| key.as_str()).collect();
                        format!("property names {} are invalid", list.join(", "))
                    })
            );
        }
        let count = map.len() as f64;
        if let Some(limit) = k.min_properties {
            verdict!(
                count >= limit
                    || self.fail(|| format!(
                        "must not have fewer than {} properties",
                        number_to_string(limit)
                    ))
            );
        }
        if let Some(limit) = k.max_properties {
            verdict!(
                count <= limit
                    || self.fail(|| format!(
                        "must not have more than {} properties",
                        number_to_string(limit)
                    ))
            );
        }
        Ok(valid)
    }

    fn array_keywords(&mut self, k: &Keywords, items: &[Value]) -> Result<bool, Fault> {
        let mut valid = true;
        macro_rules! verdict {
            ($ok:expr) => {
                if !$ok {
                    valid = false;
                    if !self.collect {
                        return Ok(false);
                    }
                }
            };
        }
        if let (Some(additional), Some(Items::Tuple(tuple))) = (k.additional_items, &k.items) {
            // TypeBox stops at the first failing additional item here.
            for (index, item) in items.iter().enumerate().skip(tuple.len()) {
                if !self.child(|| Segment::Index(index), additional, item)? {
                    verdict!(false);
                    break;
                }
            }
        }
        let count = items.len() as f64;
        let contained = |s: &mut Self, node: NodeId| -> Result<usize, Fault> {
            let mut matches = 0;
            for item in items {
                if s.quietly(|s| s.eval(node, item))? {
                    matches += 1;
                }
            }
            Ok(matches)
        };
        if let Some(contains) = k.contains
            && k.min_contains != Some(0.0)
        {
            let found = !items.is_empty() && contained(self, contains)? > 0;
            verdict!(found || self.fail(|| "must contain at least 1 valid item".into()));
        }
        match &k.items {
            Some(Items::Tuple(tuple)) => {
                for (index, node) in tuple.iter().enumerate() {
                    if let Some(item) = items.get(index) {
                        verdict!(self.child(|| Segment::Index(index), *node, item)?);
                    }
                }
            }
            Some(Items::Every(node)) => {
                let offset = k.prefix_items.as_ref().map_or(0, Vec::len);
                for (index, item) in items.iter().enumerate().skip(offset) {
                    verdict!(self.child(|| Segment::Index(index), *node, item)?);
                }
            }
            None => {}
        }
        if let Some(contains) = k.contains {
            if let Some(limit) = k.min_contains {
                let found = contained(self, contains)? as f64;
                verdict!(
                    found >= limit || self.fail(|| "must contain at least 1 valid item".into())
                );
            }
            if let Some(limit) = k.max_contains {
                let found = contained(self, contains)? as f64;
                verdict!(
                    found <= limit || self.fail(|| "must contain at least 1 valid item".into())
                );
            }
        }
        if let Some(limit) = k.min_items {
            verdict!(
                count >= limit
                    || self.fail(|| format!(
                        "must not have fewer than {} items",
                        number_to_string(limit)
                    ))
            );
        }
        if let Some(limit) = k.max_items {
            verdict!(
                count <= limit
                    || self.fail(|| format!(
                        "must not have more than {} items",
                        number_to_string(limit)
                    ))
            );
        }
        if let Some(prefix) = &k.prefix_items {
            for (index, node) in prefix.iter().enumerate() {
                if let Some(item) = items.get(index) {
                    verdict!(self.child(|| Segment::Index(index), *node, item)?);
                }
            }
        }
        if k.unique_items == Some(true) {
            let mut seen = HashSet::with_capacity(items.len());
            let unique = items.iter().all(|item| {
                let mut key = String::new();
                canonical(item, &mut key);
                seen.insert(key)
            });
            verdict!(unique || self.fail(|| "must not have duplicate items".into()));
        }
        Ok(valid)
    }

    fn string_keywords(&mut self, k: &Keywords, text: &str) -> bool {
        let mut valid = true;
        let length = || text.chars().count() as f64;
        if let Some(limit) = k.min_length
            && length() < limit
        {
            valid = self.fail(|| {
                format!(
                    "must not have fewer than {} characters",
                    number_to_string(limit)
                )
            });
            if !self.collect {
                return false;
            }
        }
        if let Some(limit) = k.max_length
            && length() > limit
        {
            valid = self.fail(|| {
                format!(
                    "must not have more than {} characters",
                    number_to_string(limit)
                )
            });
            if !self.collect {
                return false;
            }
        }
        if let Some((name, Some(check))) = &k.format
            && !check(text)
        {
            valid = self.fail(|| format!("must match format \"{name}\""));
            if !self.collect {
                return false;
            }
        }
        if let Some(pattern) = &k.pattern
            && !pattern.regex.is_match(text)
        {
            valid = self.fail(|| format!("must match pattern \"{}\"", pattern.source));
        }
        valid
    }

    fn number_keywords(&mut self, k: &Keywords, n: f64) -> bool {
        type Comparison = fn(f64, f64) -> bool;
        let checks: [(Option<f64>, Comparison, &str); 4] = [
            (k.exclusive_minimum, |n, l| n > l, ">"),
            (k.exclusive_maximum, |n, l| n < l, "<"),
            (k.minimum, |n, l| n >= l, ">="),
            (k.maximum, |n, l| n <= l, "<="),
        ];
        let mut valid = true;
        for (limit, holds, comparison) in checks {
            if let Some(limit) = limit
                && !holds(n, limit)
            {
                valid = self.fail(|| format!("must be {comparison} {}", number_to_string(limit)));
                if !self.collect {
                    return false;
                }
            }
        }
        if let Some(divisor) = k.multiple_of
            && !is_multiple_of(n, divisor)
        {
            valid = self.fail(|| format!("must be multiple of {}", number_to_string(divisor)));
        }
        valid
    }
}

fn is_integer(n: f64) -> bool {
    n.is_finite() && n.trunc() == n
}

/// TypeBox's type names, JSON Schema's and its own (`bigint`, `undefined`, … never match JSON);
/// an unknown name matches anything.
pub(crate) fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_number().is_some_and(|n| is_integer(number_of(n))),
        "number" => value.is_number(),
        "null" => value.is_null(),
        "string" => value.is_string(),
        "bigint" | "constructor" | "function" | "symbol" | "undefined" | "void" => false,
        _ => true,
    }
}

/// TypeBox's `IsMultipleOf`: integers are multiples of any 1/n, otherwise within 1e-10.
fn is_multiple_of(dividend: f64, divisor: f64) -> bool {
    if is_integer(dividend) && (1.0 / divisor) % 1.0 == 0.0 {
        return true;
    }
    let rest = dividend % divisor;
    let candidates = [rest.abs(), (rest - divisor).abs(), (rest + divisor).abs()];
    // Math.min is NaN when any argument is.
    !candidates.iter().any(|c| c.is_nan())
        && candidates.into_iter().fold(f64::INFINITY, f64::min) < 1e-10
}

/// `const` / `enum` equality: `===` for primitives (so 1 equals 1.0), structural for arrays and
/// objects (key order ignored).
pub(crate) fn js_equal(expected: &Value, value: &Value) -> bool {
    match (expected, value) {
        (Value::Number(a), Value::Number(b)) => number_of(a) == number_of(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| js_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| js_equal(x, y)))
        }
        (a, b) => a == b,
    }
}

/// A string that is equal for two values exactly when TypeBox's hash is: numbers by their bits
/// (so 0 and -0 differ, 1 and 1.0 do not), object keys sorted.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push('n'),
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Number(n) => {
            let _ = write!(out, "#{:x};", number_of(n).to_bits());
        }
        Value::String(s) => {
            let _ = write!(out, "s{}:{s}", s.len());
        }
        Value::Array(items) => {
            out.push('[');
            for item in items {
                canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for key in keys {
                let _ = write!(out, "{}:{key}", key.len());
                canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn multiple_of_matches_typebox() {
        assert!(is_multiple_of(0.3, 0.1));
        assert!(!is_multiple_of(0.35, 0.1));
        assert!(is_multiple_of(7.0, 0.5));
        assert!(!is_multiple_of(10.0, 3.0));
        assert!(!is_multiple_of(1.0, 0.0));
    }

    #[test]
    fn equality_and_uniqueness() {
        assert!(js_equal(
            &json!({"a": [1, {"b": null}]}),
            &json!({"a": [1.0, {"b": null}]})
        ));
        assert!(!js_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        let key = |v: &Value| {
            let mut s = String::new();
            canonical(v, &mut s);
            s
        };
        assert_eq!(
            key(&json!({"a": 1, "b": 2})),
            key(&json!({"b": 2, "a": 1.0}))
        );
        assert_ne!(key(&json!(0.0)), key(&json!(-0.0)));
        assert_ne!(key(&json!(["ab"])), key(&json!(["a", "b"])));
    }
}
