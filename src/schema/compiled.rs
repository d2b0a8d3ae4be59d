//! A JSON Schema compiled once with the `jsonschema` crate, checking values and naming union branches.

use serde_json::Value;

use self::dispatch::Dispatch;
use super::{Check, SchemaIssue, Tape, TapeJson};

/// Longest message kept for one issue: a message quotes the failing instance, which may be huge.
const MAX_MESSAGE: usize = 300;

/// The schema itself is not a valid JSON Schema: every problem, each with its path inside the schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSON Schema: {}", .issues.iter().map(|i| format!("at {:?}: {}", i.path, i.message)).collect::<Vec<_>>().join("; "))]
pub struct InvalidSchema {
    /// Paths are JSON Pointers into the schema document.
    pub issues: Vec<SchemaIssue>,
}

/// One branch of a top-level `oneOf`/`anyOf` union: its name and its own validator.
struct Branch {
    name: String,
    /// The branch's `properties.type.const`, when it has one (TrustGraph's discriminator).
    discriminator: Option<Value>,
    validator: jsonschema::Validator,
    /// The same, for records read onto a tape.
    tape_validator: jsonschema::Validator<TapeJson>,
}

/// A schema compiled once; [`Check`] validates values against it.
pub struct CompiledSchema {
    source: Value,
    validator: jsonschema::Validator,
    /// The same, for records read onto a tape (see [`Check::check_tape`]).
    tape_validator: jsonschema::Validator<TapeJson>,
    branches: Vec<Branch>,
    /// For a list schema whose items are a union: where the items are and their own compiled schema,
    /// so an item's issues point at its failing field rather than at "not valid under any of the schemas".
    union_items: Option<(&'static str, Box<CompiledSchema>)>,
    /// For a union discriminated by `type` consts: the branch an object names (see `dispatch.rs`).
    dispatch: Option<Dispatch>,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").field("source", &self.source).finish()
    }
}

impl CompiledSchema {
    /// Checks `schema` against its meta-schema, then compiles it (and each union branch) once.
    pub fn compile(schema: &Value) -> Result<Self, InvalidSchema> {
        let validator = build(schema)?;
        let tape_validator = jsonschema::options_for::<TapeJson>().build(schema).map_err(|e| single(&e))?;
        let branches = union_branches(schema)
            .iter()
            .enumerate()
            .map(|(index, branch)| {
                let discriminator = branch.pointer("/properties/type/const").cloned();
                let name = match &discriminator {
                    Some(Value::String(name)) => name.clone(),
                    Some(other) => other.to_string(),
                    None => index.to_string(),
                };
                // The branch is part of a schema that compiled, so it compiles too; a branch that
                // refers to definitions elsewhere in the document may not, and then names by index only.
                let branch = with_definitions(schema, branch);
                let validator = jsonschema::validator_for(&branch).ok()?;
                let tape_validator = jsonschema::options_for::<TapeJson>().build(&branch).ok()?;
                Some(Branch { name, discriminator, validator, tape_validator })
            })
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        let dispatch = Dispatch::of(schema).filter(|_| !branches.is_empty());
        let mut compiled =
            Self { source: schema.clone(), validator, tape_validator, branches, union_items: None, dispatch };
        let items_at = if compiled.source.get("type") == Some(&Value::from("array")) { "" } else { "/items" };
        if let Some(Ok(items)) = compiled.item_schema() {
            if !items.branches.is_empty() {
                compiled.union_items = Some((items_at, Box::new(items)));
            }
        }
        Ok(compiled)
    }

    /// The schema document as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// The schema of one item of an array answer: `items` of an array schema, or of PtcRunner's
    /// `{"items": [...]}` wrapper. `None` when the schema does not describe a list.
    pub fn item_schema(&self) -> Option<Result<CompiledSchema, InvalidSchema>> {
        let items = if self.source.get("type") == Some(&Value::from("array")) {
            self.source.get("items")
        } else {
            self.source.pointer("/properties/items/items")
        }?;
        Some(CompiledSchema::compile(&with_definitions(&self.source, items)))
    }

    /// The name of the branch `value` matched (it is valid against the whole schema).
    fn matched_branch(&self, value: &Value) -> Option<String> {
        if self.branches.is_empty() {
            return None;
        }
        let tag = value.get("type");
        let by_tag = self.branches.iter().find(|b| b.discriminator.is_some() && b.discriminator.as_ref() == tag);
        by_tag.or_else(|| self.branches.iter().find(|b| b.validator.is_valid(value))).map(|b| b.name.clone())
    }

    /// Every issue of an invalid value. For a union, the issues of the branch its `type` names, which
    /// point at the failing field rather than at "not valid under any of the schemas".
    fn issues(&self, value: &Value) -> Vec<SchemaIssue> {
        let tag = value.get("type");
        let branch = self.branches.iter().find(|b| b.discriminator.is_some() && b.discriminator.as_ref() == tag);
        let validator = branch.map_or(&self.validator, |b| &b.validator);
        let mut issues: Vec<SchemaIssue> =
            validator.iter_errors(value).map(|e| issue(e.instance_path().as_str(), &e)).collect();
        if let Some((items_at, items)) = &self.union_items {
            issues = issues.into_iter().flat_map(|i| items.item_issues(value, items_at, i)).collect();
        }
        if issues.is_empty() {
            // Valid against the branch but not the whole (e.g. matches two `oneOf` branches).
            issues = self.validator.iter_errors(value).map(|e| issue(e.instance_path().as_str(), &e)).collect();
        }
        if branch.is_none() && !self.branches.is_empty() {
            let names: Vec<_> =
                self.branches.iter().filter_map(|b| b.discriminator.as_ref()).map(Value::to_string).collect();
            if !names.is_empty() {
                let found = tag.map_or_else(|| "no \"type\"".to_string(), |t| format!("\"type\" {t}"));
                issues.push(SchemaIssue {
                    path: "/type".into(),
                    message: format!("{found} names no branch of the union; expected one of {}", names.join(", ")),
                });
            }
        }
        issues
    }
}

impl CompiledSchema {
    /// `issue` of a list answer, replaced by the item schema's own issues when it is about one whole item.
    fn item_issues(&self, list: &Value, items_at: &str, issue: SchemaIssue) -> Vec<SchemaIssue> {
        let item = issue.path.strip_prefix(items_at).and_then(|rest| rest.strip_prefix('/'));
        let index = item.filter(|i| !i.contains('/')).and_then(|i| i.parse::<usize>().ok());
        let element = index.and_then(|i| list.pointer(&format!("{items_at}/{i}")));
        match element.map(|e| self.issues(e)) {
            Some(inner) if !inner.is_empty() => inner
                .into_iter()
                .map(|i| SchemaIssue { path: format!("{}{}", issue.path, i.path), message: i.message })
                .collect(),
            _ => vec![issue],
        }
    }
}

impl Check for CompiledSchema {
    fn check(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        if let (Some(dispatch), Some(Value::String(tag))) = (&self.dispatch, type_of(value)) {
            // Only the branch `tag` names can accept the object: its verdict is the whole schema's.
            return match dispatch.branch(tag).and_then(|index| self.branches.get(index)) {
                Some(branch) if branch.validator.is_valid(value) => Ok(Some(branch.name.clone())),
                _ => Err(self.issues(value)),
            };
        }
        self.check_whole(value)
    }

    /// As [`Check::check`], validating the tape itself; the value is built only to report issues
    /// (or when a key repeats, or for a union without a `type` to dispatch on).
    fn check_tape(&self, tape: &Tape) -> Result<Option<String>, Vec<SchemaIssue>> {
        if tape.repeats_keys() {
            return self.check(&tape.to_value());
        }
        if let (Some(dispatch), Some(tag)) = (&self.dispatch, tape.member_str("type")) {
            return match dispatch.branch(tag).and_then(|index| self.branches.get(index)) {
                Some(branch) if branch.tape_validator.is_valid(tape.root()) => Ok(Some(branch.name.clone())),
                _ => Err(self.issues(&tape.to_value())),
            };
        }
        if !self.branches.is_empty() {
            return self.check_whole(&tape.to_value());
        }
        if self.tape_validator.is_valid(tape.root()) {
            Ok(None)
        } else {
            Err(self.issues(&tape.to_value()))
        }
    }
}

impl CompiledSchema {
    /// The check against the whole schema, the union's branches all tried.
    fn check_whole(&self, value: &Value) -> Result<Option<String>, Vec<SchemaIssue>> {
        if self.validator.is_valid(value) {
            Ok(self.matched_branch(value))
        } else {
            Err(self.issues(value))
        }
    }
}

/// An object's `type` member: found by comparing keys in a small object (cheaper than hashing one).
fn type_of(value: &Value) -> Option<&Value> {
    let object = value.as_object()?;
    if object.len() <= 8 {
        object.iter().find_map(|(key, member)| (key == "type").then_some(member))
    } else {
        object.get("type")
    }
}

/// Meta-validates and compiles `schema`, reporting every problem with its path in the schema.
fn build(schema: &Value) -> Result<jsonschema::Validator, InvalidSchema> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        let message = format!("a schema is an object or a boolean, not {}", kind_of(schema));
        return Err(InvalidSchema { issues: vec![SchemaIssue { path: String::new(), message }] });
    }
    let meta = jsonschema::meta::validator_for(schema).map_err(|e| single(&e))?;
    let issues: Vec<SchemaIssue> = meta.iter_errors(schema).map(|e| issue(e.instance_path().as_str(), &e)).collect();
    if !issues.is_empty() {
        return Err(InvalidSchema { issues });
    }
    jsonschema::validator_for(schema).map_err(|e| single(&e))
}

fn single(error: &jsonschema::ValidationError<'_>) -> InvalidSchema {
    InvalidSchema { issues: vec![issue(error.instance_path().as_str(), error)] }
}

fn issue(path: &str, error: &impl std::fmt::Display) -> SchemaIssue {
    let mut message = error.to_string();
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    SchemaIssue { path: path.to_string(), message }
}

/// What a JSON value is, in words (`an object`, `a string`, `null`).
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The branches of a top-level `oneOf` (or `anyOf`) union.
fn union_branches(schema: &Value) -> &[Value] {
    ["oneOf", "anyOf"].iter().find_map(|key| schema.get(*key).and_then(Value::as_array)).map_or(&[], Vec::as_slice)
}

/// A sub-schema carrying the document's `$defs`/`definitions`, so its local `$ref`s still resolve.
fn with_definitions(document: &Value, sub: &Value) -> Value {
    let mut sub = sub.clone();
    if let Value::Object(map) = &mut sub {
        for key in ["$defs", "definitions", "$schema"] {
            if let (Some(defs), false) = (document.get(key), map.contains_key(key)) {
                map.insert(key.to_string(), defs.clone());
            }
        }
    }
    sub
}

mod dispatch;
#[cfg(test)]
mod tests;
