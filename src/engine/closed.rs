//! Objects held to the keys their schema lists: under `json-schema` and `constrained` the local model
//! reads a missing `additionalProperties` as `false`, as OpenAI's strict mode does, so the grammar
//! never lets the model add keys of its own (it would, until the token limit).
//!
//! An object schema is closed when it lists `properties` and says nothing of other keys: no
//! `additionalProperties` (an explicit `true` or schema is left as written: the prompt's way to keep
//! an object open), no `patternProperties`, and no `required` key outside its `properties` (such a
//! schema expects keys it does not list). Nested schemas are closed too (properties, items, `anyOf` and
//! `oneOf` branches, definitions); `allOf` branches, `not` and `if`/`then`/`else` are left as written
//! (closing one branch of `allOf` would refuse the keys another branch adds).

use serde_json::{Map, Value};

/// `schema` with every object schema that lists its keys closed to them.
pub fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    close(&mut schema);
    schema
}

/// Keywords whose value is an object of schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is one schema (`items` may also be a list, as in older drafts).
const SCHEMAS: &[&str] = &["items", "additionalProperties", "additionalItems", "contains"];

fn close(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if lists_its_keys(map) {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::Object(schemas) if SCHEMA_MAPS.contains(&keyword) => schemas.values_mut().for_each(close),
            Value::Array(schemas) if SCHEMA_LISTS.contains(&keyword) || keyword == "items" => {
                schemas.iter_mut().for_each(close)
            }
            value if SCHEMAS.contains(&keyword) => close(value),
            _ => {}
        }
    }
}

/// Lists `properties`, says nothing of other keys, and requires none it does not list.
fn lists_its_keys(map: &Map<String, Value>) -> bool {
    let Some(Value::Object(properties)) = map.get("properties") else { return false };
    let required_listed = match map.get("required") {
        Some(Value::Array(required)) => {
            required.iter().all(|key| key.as_str().is_some_and(|k| properties.contains_key(k)))
        }
        _ => true,
    };
    !map.contains_key("additionalProperties") && !map.contains_key("patternProperties") && required_listed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_that_lists_its_keys_is_closed_nested_too() {
        let schema = json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"properties": {"c": {}}}}},
            "$defs": {"d": {"properties": {"e": {}}}}});
        let closed = closed(&schema);
        assert_eq!(closed["additionalProperties"], false);
        assert_eq!(closed["properties"]["b"]["items"]["additionalProperties"], false);
        assert_eq!(closed["$defs"]["d"]["additionalProperties"], false);
        assert!(closed["properties"]["a"].get("additionalProperties").is_none(), "a string is no object");
    }

    #[test]
    fn union_branches_are_closed_and_the_rest_is_left_as_written() {
        let schema = json!({"oneOf": [{"properties": {"type": {"const": "x"}}}, {"properties": {"y": {}}}]});
        assert!(closed(&schema)["oneOf"].as_array().unwrap().iter().all(|b| b["additionalProperties"] == false));
        let open = json!({"properties": {"a": {}}, "additionalProperties": true});
        assert_eq!(closed(&open), open, "an explicit additionalProperties is the prompt's word");
        let patterned = json!({"properties": {"a": {}}, "patternProperties": {"^x-": {}}});
        assert_eq!(closed(&patterned), patterned);
        let expects_more = json!({"properties": {"a": {}}, "required": ["a", "b"]});
        assert_eq!(closed(&expects_more), expects_more, "requires a key it does not list");
        let free = json!({"type": "object"});
        assert_eq!(closed(&free), free, "no keys listed: any object");
        let all_of = json!({"allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]});
        assert_eq!(closed(&all_of), all_of);
    }
}
