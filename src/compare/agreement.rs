//! Agreement between the two sides' items: matched on a key field (the user's, or by default the
//! first string field of the first item that is not a union's `type` tag), each match the same or
//! differing field by field, and the items only one side has.
//!
//! Items with the same key value are matched in order (the 2nd "DNA" of A with the 2nd "DNA" of B).
//! Items that lack the key are matched only to an equal item of the other side.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::schema::Check;

/// How the two sides' items agree.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// The field items are matched on (`None`: no item has a string field; items match when equal).
    pub key: Option<String>,
    /// Items present on both sides (`same + differ`).
    pub both: usize,
    /// Of those, identical on both sides.
    pub same: usize,
    /// Of those, differing in at least one field.
    pub differ: usize,
    pub only_a: usize,
    pub only_b: usize,
    /// One row per matched pair or unmatched item: A's items in order, then B's unmatched ones.
    pub rows: Vec<Row>,
}

/// One line of the agreement table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The key's value (`null` for an item without the key).
    pub key: Value,
    pub status: RowStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Value>,
    /// For `differ`: each field whose value is not the same (missing on a side: `null` there).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldChange>,
}

/// Where an item is and whether it matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Same,
    Differ,
    OnlyA,
    OnlyB,
}

/// A field whose value differs between the matched items.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub a: Option<Value>,
    pub b: Option<Value>,
}

/// The default key: the first string field of the first object item (A's, else B's), skipping a
/// field whose value is the union branch `check` names for that item (a `type` tag is no key).
pub fn default_key(a: &[Value], b: &[Value], check: Option<&Arc<dyn Check>>) -> Option<String> {
    let item = a.iter().chain(b).find(|item| item.as_object().is_some_and(|o| o.values().any(Value::is_string)))?;
    let branch = check.and_then(|c| c.check(item).ok().flatten());
    let object = item.as_object()?;
    let key = object
        .iter()
        .filter(|(_, value)| value.is_string())
        .find(|(_, value)| branch.is_none() || value.as_str() != branch.as_deref())
        .or_else(|| object.iter().find(|(_, value)| value.is_string()))?;
    Some(key.0.clone())
}

/// Matches `a` and `b` on `key` (see the module's rules).
pub fn agree(a: &[Value], b: &[Value], key: Option<&str>) -> Agreement {
    let key_of = |item: &Value| key.and_then(|k| item.get(k)).cloned();
    // B's keyed items by (key text, occurrence); its keyless items in order.
    let mut b_keyed: HashMap<(String, usize), usize> = HashMap::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (at, item) in b.iter().enumerate() {
        if let Some(k) = key_of(item) {
            let text = k.to_string();
            let n = seen.entry(text.clone()).or_default();
            b_keyed.insert((text, *n), at);
            *n += 1;
        }
    }
    let mut b_used = vec![false; b.len()];
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut agreement = Agreement { key: key.map(str::to_string), ..Agreement::default() };
    for item in a {
        let key_value = key_of(item);
        let partner = match &key_value {
            Some(k) => {
                let text = k.to_string();
                let n = seen.entry(text.clone()).or_default();
                let found = b_keyed.get(&(text, *n)).copied();
                *n += 1;
                found
            }
            None => (0..b.len()).find(|&at| !b_used[at] && key_of(&b[at]).is_none() && b[at] == *item),
        };
        let row = match partner {
            Some(at) => {
                b_used[at] = true;
                let fields = field_changes(item, &b[at]);
                let status = if fields.is_empty() && *item == b[at] { RowStatus::Same } else { RowStatus::Differ };
                Row {
                    key: key_value.unwrap_or(Value::Null),
                    status,
                    a: Some(item.clone()),
                    b: Some(b[at].clone()),
                    fields,
                }
            }
            None => Row {
                key: key_value.unwrap_or(Value::Null),
                status: RowStatus::OnlyA,
                a: Some(item.clone()),
                b: None,
                fields: Vec::new(),
            },
        };
        agreement.rows.push(row);
    }
    for (_, item) in b.iter().enumerate().filter(|(at, _)| !b_used[*at]) {
        let key_value = key_of(item).unwrap_or(Value::Null);
        agreement.rows.push(Row {
            key: key_value,
            status: RowStatus::OnlyB,
            a: None,
            b: Some(item.clone()),
            fields: Vec::new(),
        });
    }
    for row in &agreement.rows {
        match row.status {
            RowStatus::Same => agreement.same += 1,
            RowStatus::Differ => agreement.differ += 1,
            RowStatus::OnlyA => agreement.only_a += 1,
            RowStatus::OnlyB => agreement.only_b += 1,
        }
    }
    agreement.both = agreement.same + agreement.differ;
    agreement
}

/// The fields of two objects whose values differ (A's field order, then B's new fields); for
/// non-objects, one change named `""` when they differ.
fn field_changes(a: &Value, b: &Value) -> Vec<FieldChange> {
    let (Some(a_map), Some(b_map)) = (a.as_object(), b.as_object()) else {
        return if a == b {
            Vec::new()
        } else {
            vec![FieldChange { field: String::new(), a: Some(a.clone()), b: Some(b.clone()) }]
        };
    };
    let mut changes: Vec<FieldChange> = a_map
        .iter()
        .filter(|(k, v)| b_map.get(*k) != Some(v))
        .map(|(k, v)| FieldChange { field: k.clone(), a: Some(v.clone()), b: b_map.get(k).cloned() })
        .collect();
    changes.extend(b_map.iter().filter(|(k, _)| !a_map.contains_key(*k)).map(|(k, v)| FieldChange {
        field: k.clone(),
        a: None,
        b: Some(v.clone()),
    }));
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_match_on_the_key_in_order_and_differ_field_by_field() {
        let a = [
            json!({"entity": "DNA", "definition": "x"}),
            json!({"entity": "RNA", "definition": "y"}),
            json!({"entity": "DNA", "definition": "z"}),
            json!({"note": "keyless"}),
        ];
        let b = [
            json!({"entity": "DNA", "definition": "x"}),
            json!({"entity": "DNA", "definition": "w", "extra": 1}),
            json!({"note": "keyless"}),
            json!({"entity": "ATP", "definition": "v"}),
        ];
        let key = default_key(&a, &b, None);
        assert_eq!(key.as_deref(), Some("entity"));
        let agreement = agree(&a, &b, key.as_deref());
        let counts = (agreement.both, agreement.same, agreement.differ, agreement.only_a, agreement.only_b);
        assert_eq!(counts, (3, 2, 1, 1, 1));
        let differ = agreement.rows.iter().find(|r| r.status == RowStatus::Differ).unwrap();
        let fields: Vec<_> = differ.fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["definition", "extra"]);
        assert_eq!(differ.fields[1].a, None);
    }

    #[test]
    fn a_union_tag_is_not_the_default_key() {
        use crate::schema::CompiledSchema;
        let schema = json!({"oneOf": [
            {"type": "object", "properties": {"type": {"const": "definition"}, "entity": {"type": "string"}}, "required": ["type"]},
            {"type": "object", "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"}}, "required": ["type"]}
        ]});
        let check: Arc<dyn Check> = Arc::new(CompiledSchema::compile(&schema).unwrap());
        let items = [json!({"type": "definition", "entity": "volcano"})];
        assert_eq!(default_key(&items, &[], Some(&check)).as_deref(), Some("entity"));
        assert_eq!(default_key(&items, &[], None).as_deref(), Some("type"));
        assert_eq!(default_key(&[json!(1)], &[json!({"n": 2})], None), None);
    }
}
