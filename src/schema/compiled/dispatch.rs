//! The fast path of a discriminated union: when every branch of a top-level `oneOf`/`anyOf` pins the
//! `type` property to its own string `const` (TrustGraph's unions), an object's `type` names the only
//! branch that can accept it, so validating that branch alone gives exactly the whole schema's verdict.
//!
//! Taken only where that equivalence is certain: the root holds the union and annotations only, its
//! draft has `const` (6 and later), no branch is a `$ref` (whose siblings draft 7 ignores), consts are
//! distinct, and every reference in the document points into its `$defs`/`definitions` (which each
//! branch's own validator carries), with no `$id` or anchor that would move a base.

use std::collections::HashMap;

use serde_json::Value;

/// Root keys that do not validate anything besides the union.
const ANNOTATIONS: &[&str] =
    &["$schema", "$defs", "definitions", "$comment", "title", "description", "examples", "default", "deprecated"];

/// Drafts whose `const` keyword exists (an unknown `$schema` keeps the slow path).
const DRAFTS_WITH_CONST: &[&str] = &[
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2020-12/schema",
];

/// Above this many branches a hash map finds the branch; below, comparing the consts is faster.
const LINEAR_UP_TO: usize = 8;

/// Which branch an object's string `type` names.
#[derive(Debug)]
pub(super) struct Dispatch {
    consts: Vec<String>,
    by_const: Option<HashMap<String, usize>>,
}

impl Dispatch {
    /// The dispatch of `schema`'s union, when the fast path is certain to agree with the whole schema.
    pub fn of(schema: &Value) -> Option<Dispatch> {
        let root = schema.as_object()?;
        let unions: Vec<&Value> = ["oneOf", "anyOf"].iter().filter_map(|key| root.get(*key)).collect();
        let [Value::Array(branches)] = unions.as_slice() else { return None };
        if root.keys().any(|key| key != "oneOf" && key != "anyOf" && !ANNOTATIONS.contains(&key.as_str())) {
            return None;
        }
        if let Some(draft) = root.get("$schema") {
            let draft = draft.as_str()?.trim_end_matches('#');
            if !DRAFTS_WITH_CONST.contains(&draft) {
                return None;
            }
        }
        let mut consts = Vec::with_capacity(branches.len());
        for branch in branches {
            let object = branch.as_object()?;
            let pinned = object.get("properties")?.get("type")?.as_object()?;
            if ["$ref", "$dynamicRef", "$recursiveRef"]
                .iter()
                .any(|key| object.contains_key(*key) || pinned.contains_key(*key))
            {
                return None;
            }
            let name = pinned.get("const")?.as_str()?;
            if consts.iter().any(|seen: &String| seen == name) {
                return None;
            }
            consts.push(name.to_owned());
        }
        if consts.is_empty() || !self_contained(schema) {
            return None;
        }
        let by_const = (consts.len() > LINEAR_UP_TO)
            .then(|| consts.iter().enumerate().map(|(index, name)| (name.clone(), index)).collect());
        Some(Dispatch { consts, by_const })
    }

    /// The index of the branch whose `const` is `tag`; `None` when no branch has it (then none accepts).
    pub fn branch(&self, tag: &str) -> Option<usize> {
        match &self.by_const {
            Some(map) => map.get(tag).copied(),
            None => self.consts.iter().position(|name| name == tag),
        }
    }
}

/// Whether every reference in the document points into `$defs`/`definitions` and nothing in it sets a
/// base URI or an anchor (walked with a stack: a schema may nest deeper than the call stack allows).
fn self_contained(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                for (key, value) in map {
                    match key.as_str() {
                        "$id" | "$anchor" | "$dynamicAnchor" | "$recursiveAnchor" => return false,
                        "$ref" | "$dynamicRef" | "$recursiveRef" => {
                            let local = value.as_str().is_some_and(|target| {
                                target.starts_with("#/$defs/") || target.starts_with("#/definitions/")
                            });
                            if !local {
                                return false;
                            }
                        }
                        _ => stack.push(value),
                    }
                }
            }
            Value::Array(values) => stack.extend(values),
            _ => {}
        }
    }
    true
}
