//! What the prompt's schema says about one item of the answer: the fields it declares (so a pointer
//! to a field no branch declares is a mistake caught before any model call) and the default pairing
//! key (the union's `type` const plus the first required string field of its branch, else the first
//! required string field, else the whole item).

use serde_json::Value;

use super::fields::pointer;
use crate::output::ResponseType;

/// How answer items are paired with expected items.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum PairKey {
    /// These JSON Pointers into each item (a missing field counts as null).
    Fields(Vec<String>),
    /// A union told apart by `type`: `type` plus the field each branch names (`(const, pointer)`).
    Union(Vec<(Value, String)>),
    /// The whole item (no schema says which field names an item).
    #[default]
    Whole,
    /// No key: the answer is one value, paired with the one expected value (`value = ...`).
    Answer,
}

impl PairKey {
    /// The pointers that make `item`'s key.
    pub fn parts(&self, item: &Value) -> Vec<String> {
        match self {
            PairKey::Fields(fields) => fields.clone(),
            PairKey::Union(branches) => {
                let mut parts = vec!["/type".to_string()];
                if let Some((_, field)) = branches.iter().find(|(tag, _)| item.get("type") == Some(tag)) {
                    parts.push(field.clone());
                }
                parts
            }
            PairKey::Whole => vec![String::new()],
            PairKey::Answer => Vec::new(),
        }
    }

    /// As a report says it: `/drug`, `/subject + /object`,
    /// `/type + /entity (definition) | /type + /subject (relationship)`, `the whole item`,
    /// `the answer (one value)`.
    pub fn describe(&self) -> String {
        match self {
            PairKey::Fields(fields) => fields.join(" + "),
            PairKey::Union(branches) => branches
                .iter()
                .map(|(tag, field)| {
                    let tag = tag.as_str().map_or_else(|| tag.to_string(), str::to_string);
                    format!("/type + {field} ({tag})")
                })
                .collect::<Vec<_>>()
                .join(" | "),
            PairKey::Whole => "the whole item".to_string(),
            PairKey::Answer => "the answer (one value)".to_string(),
        }
    }
}

/// One item's schema as far as expectations care.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shape {
    /// Every property some branch declares (`None`: the schema declares none, any field may exist).
    pub declared: Option<Vec<String>>,
    /// Whether the whole answer is a list of items (jsonl, or a json array / `{"items": [...]}`).
    pub list: bool,
    /// The default key.
    pub key: Option<PairKey>,
}

/// The shape of one item under `schema` (the prompt's resolved schema) for `response_type`.
pub(crate) fn shape(schema: Option<&Value>, response_type: ResponseType) -> Shape {
    let Some(schema) = schema else {
        return Shape { declared: None, list: response_type == ResponseType::Jsonl, key: None };
    };
    let (item, list) = match response_type {
        ResponseType::Text => return Shape::default(),
        ResponseType::Jsonl => (Some(schema), true),
        ResponseType::Json => match item_schema(schema) {
            Some(item) => (Some(item), true),
            None => (Some(schema), false),
        },
    };
    let Some(item) = item else { return Shape { declared: None, list, key: None } };
    let branches = branches(schema, item);
    let mut declared: Vec<String> = Vec::new();
    for branch in &branches {
        if let Some(properties) = branch.get("properties").and_then(Value::as_object) {
            for name in properties.keys() {
                if !declared.contains(name) {
                    declared.push(name.clone());
                }
            }
        }
    }
    let alternatives = branches.get(1..).unwrap_or_default();
    let union: Vec<(Value, String)> = alternatives
        .iter()
        .filter_map(|branch| {
            let tag = branch.pointer("/properties/type/const")?.clone();
            Some((tag, first_required_string(branch, true)?))
        })
        .collect();
    let key = if !union.is_empty() && union.len() == alternatives.len() {
        Some(PairKey::Union(union))
    } else {
        branches.iter().find_map(|b| first_required_string(b, false)).map(|field| PairKey::Fields(vec![field]))
    };
    Shape { declared: (!declared.is_empty()).then_some(declared), list, key }
}

/// The schema of one element of an array answer: `items` of an array schema, or of PtcRunner's
/// `{"items": [...]}` wrapper.
fn item_schema(schema: &Value) -> Option<&Value> {
    if schema.get("type") == Some(&Value::from("array")) {
        schema.get("items")
    } else {
        schema.pointer("/properties/items/items")
    }
}

/// The item schema, then each branch of its `oneOf` / `anyOf` / `allOf` (local `$ref`s followed once).
fn branches<'a>(document: &'a Value, item: &'a Value) -> Vec<&'a Value> {
    let resolve = |v: &'a Value| -> &'a Value {
        match v.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
            Some(pointer) => document.pointer(pointer).unwrap_or(v),
            None => v,
        }
    };
    let item = resolve(item);
    let mut all = vec![item];
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(list) = item.get(key).and_then(Value::as_array) {
            all.extend(list.iter().map(resolve));
        }
    }
    all
}

/// The first required field whose schema says `"type": "string"`, as a pointer (`skip_type`: not
/// the union's `type` discriminator).
fn first_required_string(branch: &Value, skip_type: bool) -> Option<String> {
    let required = branch.get("required")?.as_array()?;
    required.iter().filter_map(Value::as_str).filter(|name| !(skip_type && *name == "type")).find_map(|name| {
        let ty = branch.pointer(&format!("/properties/{}", name.replace('~', "~0").replace('/', "~1")))?.get("type")?;
        let is_string = ty == "string" || ty.as_array().is_some_and(|types| types.iter().any(|t| t == "string"));
        is_string.then(|| pointer(name))
    })
}
