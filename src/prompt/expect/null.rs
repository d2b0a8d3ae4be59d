//! TOML has no null, so a `[cases.expected]` answer spells a field's null as the table
//! `{ null = true }`: read into JSON's null ([`read`]) and written back the same way ([`spelled`]).
//! An expected item or value is never null itself (the spelling stands for a field, or a list
//! element, inside one).

use serde_json::{Map, Value};

/// Whether `map` is the spelling of null: exactly `{ null = true }`.
fn is_spelled_null(map: &Map<String, Value>) -> bool {
    map.len() == 1 && map.get("null") == Some(&Value::Bool(true))
}

/// An expected item or value as TOML wrote it, each `{ null = true }` inside it made null; `Err`
/// when the item itself is that table.
pub fn read(value: Value) -> Result<Value, String> {
    match value {
        Value::Object(map) if is_spelled_null(&map) => {
            Err("`{ null = true }` says a field is null; an expected item or value is not null itself".to_string())
        }
        value => Ok(nulls_read(value)),
    }
}

fn nulls_read(value: Value) -> Value {
    match value {
        Value::Object(map) if is_spelled_null(&map) => Value::Null,
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, nulls_read(v))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(nulls_read).collect()),
        other => other,
    }
}

/// `value` as TOML can write it: each null inside it as `{ null = true }` (a null `value` itself is
/// left null, for the writer to refuse).
pub fn spelled(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        value => nulls_spelled(value),
    }
}

fn nulls_spelled(value: &Value) -> Value {
    match value {
        Value::Null => Value::Object(Map::from_iter([("null".to_string(), Value::Bool(true))])),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), nulls_spelled(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(nulls_spelled).collect()),
        other => other.clone(),
    }
}
