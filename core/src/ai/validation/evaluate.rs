//! Evaluates a value against a compiled schema, either as a yes/no check (TypeBox's
//! `Check`, short-circuiting) or collecting errors the way TypeBox's `Errors` does: every keyword
//! of a schema is evaluated in TypeBox's order (`type`; the object keywords; the array keywords;
//! the string keywords; the number keywords; `$ref`, `const`, `enum`, `if`, `not`, `allOf`,
//! `anyOf`, `oneOf`), each error context keeps at most eight errors, and `allOf` / `anyOf` /
//! `oneOf` / `$ref` evaluate their subschemas in fresh contexts whose errors are kept only when
//! the keyword fails.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::js::{self, number_of, number_to_string};
use super::schema::{Compiled, Dependency, Items, Keywords, Node, NodeId, TypeSpec};

/// TypeBox's `maxErrors` setting: each error context keeps this many errors.
const MAX_ERRORS: usize = 8;

/// How deeply evaluation may nest (schema levels, `$ref`s included) before it gives up. Real
/// arguments stay far below (each level of a recursive `anyOf: [{$ref}, null]` schema costs
/// three), and 512 levels fit in well under 2 MiB of stack even in a debug build (about 2.3 KiB
/// a level), the stack of the runtime's worker threads.
pub(crate) const MAX_EVAL_DEPTH: usize = 512;

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

    // The keyword groups below are separate, un-inlined functions so that each frame on the
    // recursion path (eval → keywords → object_keywords → properties → child → eval) stays small:
    // nesting depth costs little stack even in debug builds.

    fn keywords(&mut self, k: &Keywords, value: &Value) -> Result<bool, Fault> {
        let mut valid = true;
        macro_rules! step {
            ($ok:expr) => {
                if !$ok {
                    valid = false;
                    if !self.collect {
                        return Ok(false);
                    }
                }
            };
        }
        if k.types.is_some() {
            step!(self.type_keyword(k, value));
        }
        match value {
            Value::Object(map) => step!(self.object_keywords(k, map, value)?),
            Value::Array(items) => step!(self.array_keywords(k, items)?),
            Value::String(text) => step!(self.string_keywords(k, text)),
            Value::Number(n) => step!(self.number_keywords(k, number_of(n))),
            _ => {}
        }
        if k.reference.is_some() {
            step!(self.reference(k, value)?);
        }
        if k.constant.is_some() || k.enumeration.is_some() {
            step!(self.constant_and_enum(k, value));
        }
        if k.conditional.is_some() {
            step!(self.conditional(k, value)?);
        }
        if let Some(not) = k.not {
            step!(self.not(not, value)?);
        }
        if let Some(all) = &k.all_of {
            step!(self.all_of(all, value)?);
        }
        if let Some(any) = &k.any_of {
            step!(self.any_of(any, value)?);
        }
        if let Some(one) = &k.one_of {
            step!(self.one_of(one, value)?);
        }
        Ok(valid)
    }

    #[inline(never)]
    fn type_keyword(&mut self, k: &Keywords, value: &Value) -> bool {
        let ok = match &k.types {
            Some(TypeSpec::One(name)) => type_matches(name, value),
            Some(TypeSpec::Many(names)) => names.iter().any(|name| type_matches(name, value)),
            None => true,
        };
        ok || self.fail(|| match &k.types {
            Some(TypeSpec::Many(names)) => format!("must be either {}", names.join(" or ")),
            Some(TypeSpec::One(name)) => format!("must be {name}"),
            None => String::new(),
        })
    }

    #[inline(never)]
    fn reference(&mut self, k: &Keywords, value: &Value) -> Result<bool, Fault> {
        let Some((reference, target)) = &k.reference else {
            return Ok(true);
        };
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
        Ok(ok)
    }

    #[inline(never)]
    fn constant_and_enum(&mut self, k: &Keywords, value: &Value) -> bool {
        let mut valid = true;
        if let Some(constant) = &k.constant
            && !js_equal(constant, value)
        {
            valid = self.fail(|| "must be equal to constant".into());
            if !self.collect {
                return false;
            }
        }
        if let Some(options) = &k.enumeration
            && !options.iter().any(|option| js_equal(option, value))
        {
            valid = self.fail(|| "must be equal to one of the allowed values".into());
        }
        valid
    }

    #[inline(never)]
    fn conditional(&mut self, k: &Keywords, value: &Value) -> Result<bool, Fault> {
        let Some((condition, then, otherwise)) = k.conditional else {
            return Ok(true);
        };
        // The `if` and `then` errors are discarded; the `else` errors are kept.
        let (holds, _) = self.fresh(|s| s.eval(condition, value))?;
        Ok(if holds {
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
        })
    }

    #[inline(never)]
    fn not(&mut self, not: NodeId, value: &Value) -> Result<bool, Fault> {
        let matched = self.quietly(|s| s.eval(not, value))?;
        Ok(!matched || self.fail(|| "must not be valid".into()))
    }

    #[inline(never)]
    fn all_of(&mut self, all: &[NodeId], value: &Value) -> Result<bool, Fault> {
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
        let ok = failed.is_empty();
        failed.into_iter().flatten().for_each(|p| self.add(p));
        Ok(ok)
    }

    #[inline(never)]
    fn any_of(&mut self, any: &[NodeId], value: &Value) -> Result<bool, Fault> {
        let mut failed = Vec::new();
        for &branch in any {
            let (ok, problems) = self.fresh(|s| s.eval(branch, value))?;
            if ok {
                return Ok(true);
            }
            failed.push(problems);
        }
        failed.into_iter().flatten().for_each(|p| self.add(p));
        Ok(self.fail(|| "must match a schema in anyOf".into()))
    }

    #[inline(never)]
    fn one_of(&mut self, one: &[NodeId], value: &Value) -> Result<bool, Fault> {
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
        Ok(passed == 1 || self.fail(|| "must match exactly one schema in oneOf".into()))
    }

    #[inline(never)]
    fn object_keywords(
        &mut self,
        k: &Keywords,
        map: &Map<String, Value>,
        value: &Value,
    ) -> Result<bool, Fault> {
        let mut valid = true;
        macro_rules! step {
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
            step!(self.required(required, map));
        }
        if let Some(additional) = k.additional_properties {
            step!(self.additional_properties(k, additional, map)?);
        }
        if !k.dependencies.is_empty() {
            step!(self.dependencies(k, map, value)?);
        }
        if !k.dependent_required.is_empty() {
            step!(self.dependent_required(k, map));
        }
        for (key, node) in &k.dependent_schemas {
            if map.contains_key(key) {
                step!(self.eval(*node, value)?);
            }
        }
        if !k.pattern_properties.is_empty() {
            step!(self.pattern_properties(k, map)?);
        }
        if let Some(properties) = &k.properties {
            step!(self.properties(properties, map)?);
        }
        if let Some(names) = k.property_names {
            step!(self.property_names(names, map)?);
        }
        if k.min_properties.is_some() || k.max_properties.is_some() {
            step!(self.property_count(k, map));
        }
        Ok(valid)
    }

    #[inline(never)]
    fn required(&mut self, required: &[String], map: &Map<String, Value>) -> bool {
        let missing: Vec<&String> = required
            .iter()
            .filter(|key| !map.contains_key(*key))
            .collect();
        let Some(first) = missing.first() else {
            return true;
        };
        if self.collect {
            // pi appends the first missing property to the path (unless it is "").
            let base = self.render_path();
            let path = match (base.is_empty(), first.is_empty()) {
                (true, true) => "root".to_owned(),
                (false, true) => base,
                (true, false) => (*first).clone(),
                (false, false) => format!("{base}.{first}"),
            };
            let list: Vec<&str> = missing.iter().map(|key| key.as_str()).collect();
            self.add(Problem {
                path,
                message: format!("must have required properties {}", list.join(", ")),
            });
        }
        false
    }

    #[inline(never)]
    fn additional_properties(
        &mut self,
        k: &Keywords,
        additional: NodeId,
        map: &Map<String, Value>,
    ) -> Result<bool, Fault> {
        let mut extra = false;
        for (key, item) in js::entries(map) {
            let known = k.property_set.contains(key)
                || k.pattern_properties
                    .iter()
                    .any(|(p, _)| p.regex.is_match(key));
            if !known && !self.child(|| Segment::Key(key.clone()), additional, item)? {
                extra = true;
                if !self.collect {
                    break;
                }
            }
        }
        Ok(!extra || self.fail(|| "must not have additional properties".into()))
    }

    #[inline(never)]
    fn dependencies(
        &mut self,
        k: &Keywords,
        map: &Map<String, Value>,
        value: &Value,
    ) -> Result<bool, Fault> {
        let mut valid = true;
        for (key, dependency) in &k.dependencies {
            if !map.contains_key(key) {
                continue;
            }
            let ok = match dependency {
                // One error per key: TypeBox stops at its first missing dependency.
                Dependency::Keys(keys) => {
                    keys.iter().all(|dep| map.contains_key(dep))
                        || self.fail(|| {
                            format!(
                                "must have properties {} when property {key} is present",
                                keys.join(", ")
                            )
                        })
                }
                Dependency::Schema(node) => self.eval(*node, value)?,
            };
            if !ok {
                valid = false;
                if !self.collect {
                    break;
                }
            }
        }
        Ok(valid)
    }

    #[inline(never)]
    fn dependent_required(&mut self, k: &Keywords, map: &Map<String, Value>) -> bool {
        let mut valid = true;
        for (key, keys) in &k.dependent_required {
            if !map.contains_key(key) {
                continue;
            }
            // One error per missing dependency.
            for dep in keys {
                if !map.contains_key(dep) {
                    valid = self.fail(|| {
                        format!(
                            "must have properties {} when property {key} is present",
                            keys.join(", ")
                        )
                    });
                    if !self.collect {
                        return false;
                    }
                }
            }
        }
        valid
    }

    #[inline(never)]
    fn pattern_properties(
        &mut self,
        k: &Keywords,
        map: &Map<String, Value>,
    ) -> Result<bool, Fault> {
        let mut valid = true;
        let entries = js::entries(map);
        for (pattern, node) in &k.pattern_properties {
            for (key, item) in &entries {
                if pattern.regex.is_match(key)
                    && !self.child(|| Segment::Key((*key).clone()), *node, item)?
                {
                    valid = false;
                    if !self.collect {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(valid)
    }

    #[inline(never)]
    fn properties(
        &mut self,
        properties: &[(String, NodeId)],
        map: &Map<String, Value>,
    ) -> Result<bool, Fault> {
        let mut valid = true;
        for (key, node) in properties {
            if let Some(item) = map.get(key)
                && !self.child(|| Segment::Key(key.clone()), *node, item)?
            {
                valid = false;
                if !self.collect {
                    return Ok(false);
                }
            }
        }
        Ok(valid)
    }

    #[inline(never)]
    fn property_names(&mut self, names: NodeId, map: &Map<String, Value>) -> Result<bool, Fault> {
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
        Ok(invalid.is_empty()
            || self.fail(|| {
                let list: Vec<&str> = invalid.iter().map(|key| key.as_str()).collect();
                format!("property names {} are invalid", list.join(", "))
            }))
    }

    #[inline(never)]
    fn property_count(&mut self, k: &Keywords, map: &Map<String, Value>) -> bool {
        let count = map.len() as f64;
        let mut valid = true;
        if let Some(limit) = k.min_properties
            && count < limit
        {
            valid = self.fail(|| {
                format!(
                    "must not have fewer than {} properties",
                    number_to_string(limit)
                )
            });
            if !self.collect {
                return false;
            }
        }
        if let Some(limit) = k.max_properties
            && count > limit
        {
            valid = self.fail(|| {
                format!(
                    "must not have more than {} properties",
                    number_to_string(limit)
                )
            });
        }
        valid
    }

    #[inline(never)]
    fn array_keywords(&mut self, k: &Keywords, items: &[Value]) -> Result<bool, Fault> {
        let mut valid = true;
        macro_rules! step {
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
            step!(self.additional_items(additional, tuple.len(), items)?);
        }
        if let Some(contains) = k.contains
            && k.min_contains != Some(0.0)
        {
            let found = !items.is_empty() && self.count_matches(contains, items)? > 0;
            step!(found || self.fail(|| "must contain at least 1 valid item".into()));
        }
        match &k.items {
            Some(Items::Tuple(nodes)) => step!(self.tuple(nodes, items)?),
            Some(Items::Every(node)) => {
                let offset = k.prefix_items.as_ref().map_or(0, Vec::len);
                step!(self.every(*node, offset, items)?);
            }
            None => {}
        }
        if let Some(contains) = k.contains {
            if let Some(limit) = k.min_contains {
                let found = self.count_matches(contains, items)? as f64;
                step!(found >= limit || self.fail(|| "must contain at least 1 valid item".into()));
            }
            if let Some(limit) = k.max_contains {
                let found = self.count_matches(contains, items)? as f64;
                step!(found <= limit || self.fail(|| "must contain at least 1 valid item".into()));
            }
        }
        if k.min_items.is_some() || k.max_items.is_some() {
            step!(self.item_count(k, items.len()));
        }
        if let Some(prefix) = &k.prefix_items {
            step!(self.tuple(prefix, items)?);
        }
        if k.unique_items == Some(true) {
            step!(unique(items) || self.fail(|| "must not have duplicate items".into()));
        }
        Ok(valid)
    }

    #[inline(never)]
    fn additional_items(
        &mut self,
        additional: NodeId,
        skip: usize,
        items: &[Value],
    ) -> Result<bool, Fault> {
        // TypeBox stops at the first failing additional item here.
        for (index, item) in items.iter().enumerate().skip(skip) {
            if !self.child(|| Segment::Index(index), additional, item)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    #[inline(never)]
    fn count_matches(&mut self, node: NodeId, items: &[Value]) -> Result<usize, Fault> {
        let mut matches = 0;
        for item in items {
            if self.quietly(|s| s.eval(node, item))? {
                matches += 1;
            }
        }
        Ok(matches)
    }

    /// One schema per position (`items` as a list, `prefixItems`).
    #[inline(never)]
    fn tuple(&mut self, nodes: &[NodeId], items: &[Value]) -> Result<bool, Fault> {
        let mut valid = true;
        for (index, (node, item)) in nodes.iter().zip(items).enumerate() {
            if !self.child(|| Segment::Index(index), *node, item)? {
                valid = false;
                if !self.collect {
                    break;
                }
            }
        }
        Ok(valid)
    }

    /// One schema for every item from `offset` on.
    #[inline(never)]
    fn every(&mut self, node: NodeId, offset: usize, items: &[Value]) -> Result<bool, Fault> {
        let mut valid = true;
        for (index, item) in items.iter().enumerate().skip(offset) {
            if !self.child(|| Segment::Index(index), node, item)? {
                valid = false;
                if !self.collect {
                    break;
                }
            }
        }
        Ok(valid)
    }

    #[inline(never)]
    fn item_count(&mut self, k: &Keywords, count: usize) -> bool {
        let count = count as f64;
        let mut valid = true;
        if let Some(limit) = k.min_items
            && count < limit
        {
            valid =
                self.fail(|| format!("must not have fewer than {} items", number_to_string(limit)));
            if !self.collect {
                return false;
            }
        }
        if let Some(limit) = k.max_items
            && count > limit
        {
            valid =
                self.fail(|| format!("must not have more than {} items", number_to_string(limit)));
        }
        valid
    }

    #[inline(never)]
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

    #[inline(never)]
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

/// TypeBox's `uniqueItems`: no two items hash alike.
fn unique(items: &[Value]) -> bool {
    let mut seen = HashSet::with_capacity(items.len());
    items.iter().all(|item| {
        let mut key = String::new();
        canonical(item, &mut key);
        seen.insert(key)
    })
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
