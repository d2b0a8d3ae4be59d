//! Signature → JSON Schema, exactly as PtcRunner's `to_json_schema/1` (signature.ex @ec1a0b9d:174-240)
//! and, on request, as its earlier versions did (§2.3, §2.4).

use serde_json::{json, Map, Value};

use super::types::{SigType, Signature};
use super::Era;

impl Signature {
    /// The JSON Schema of the return type, as PtcRunner's JSON-mode era sends it to the model:
    /// a top-level list is wrapped as `{"items": [...]}`; params are ignored.
    pub fn output_schema(&self) -> Value {
        self.output_schema_in(Era::JsonMode)
    }

    /// [`Signature::output_schema`] under another era's rules: [`Era::V0`] does not wrap a top-level
    /// list, and before [`Era::JsonMode`] `:any` maps to `{}`.
    pub fn output_schema_in(&self, era: Era) -> Value {
        match &self.returns {
            SigType::List(_) if era != Era::V0 => json!({
                "type": "object",
                "properties": {"items": type_schema(&self.returns, era)},
                "required": ["items"],
                "additionalProperties": false
            }),
            returns => type_schema(returns, era),
        }
    }

    /// The parameters as one object schema (same rules as a `{…}` map, never wrapped).
    pub fn input_schema(&self) -> Value {
        fields_schema(&self.params, Era::JsonMode)
    }
}

/// The schema of one type (`type_to_json_schema/1`).
pub fn type_schema(ty: &SigType, era: Era) -> Value {
    match ty {
        SigType::String | SigType::Keyword | SigType::Datetime => json!({"type": "string"}),
        SigType::Int => json!({"type": "integer"}),
        SigType::Float => json!({"type": "number"}),
        SigType::Bool => json!({"type": "boolean"}),
        SigType::Map => json!({"type": "object"}),
        SigType::Any if matches!(era, Era::V0 | Era::Early) => json!({}),
        SigType::Any => json!({"type": "object"}),
        SigType::List(inner) => json!({"type": "array", "items": type_schema(inner, era)}),
        // Optional only affects the parent's `required`: no null type, no `nullable`.
        SigType::Optional(inner) => type_schema(inner, era),
        SigType::Fields(fields) => fields_schema(fields, era),
    }
}

/// `{…}`: properties in declaration order (a repeated name keeps its first position and its last
/// schema), `required` = the non-optional names in order (a repeated name appears twice, as in
/// PtcRunner), `additionalProperties: false`.
fn fields_schema(fields: &[(String, SigType)], era: Era) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        let (inner, optional) = ty.unwrap_optional();
        properties.insert(name.clone(), type_schema(inner, era));
        if !optional {
            required.push(Value::String(name.clone()));
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{parse, parse_in, Era};

    fn schema(src: &str) -> serde_json::Value {
        parse(src).map(|sig| sig.output_schema()).unwrap_or_default()
    }

    #[test]
    fn primitives_map_as_ptcrunner_does() {
        assert_eq!(schema(":string"), json!({"type": "string"}));
        assert_eq!(schema(":keyword"), json!({"type": "string"}));
        assert_eq!(schema(":int"), json!({"type": "integer"}));
        assert_eq!(schema(":float"), json!({"type": "number"}));
        assert_eq!(schema(":bool"), json!({"type": "boolean"}));
        assert_eq!(schema(":any"), json!({"type": "object"}));
        assert_eq!(schema(":map"), json!({"type": "object"}));
        assert_eq!(schema(":datetime"), json!({"type": "string"}));
    }

    #[test]
    fn maps_are_closed_with_required_in_declaration_order() {
        let got = schema("{b :int, a :string?, c {x :bool}}");
        let want = json!({
            "type": "object",
            "properties": {
                "b": {"type": "integer"},
                "a": {"type": "string"},
                "c": {"type": "object", "properties": {"x": {"type": "boolean"}},
                      "required": ["x"], "additionalProperties": false}
            },
            "required": ["b", "c"],
            "additionalProperties": false
        });
        assert_eq!(got, want);
        let keys: Vec<_> = got["properties"].as_object().into_iter().flat_map(|m| m.keys()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
    }

    #[test]
    fn only_a_top_level_list_is_wrapped() {
        assert_eq!(
            schema("() -> [[:int]]"),
            json!({"type": "object",
                   "properties": {"items": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}},
                   "required": ["items"], "additionalProperties": false})
        );
        assert_eq!(schema("{xs [:int]}")["properties"]["xs"], json!({"type": "array", "items": {"type": "integer"}}));
    }

    #[test]
    fn duplicate_fields_follow_ptcrunner() {
        let got = schema("{a :int, a :string}");
        assert_eq!(got["properties"], json!({"a": {"type": "string"}}));
        assert_eq!(got["required"], json!(["a", "a"]));
    }

    /// Found by the fuzz target `signature`: such a schema does not compile (non-unique `required`),
    /// so the repeated names are reported, nested maps and parameters included.
    #[test]
    fn repeated_fields_are_named() {
        let sig = parse("(q :string, q :int) -> {count :int, count :int, items [{id :int, b :int, id :int}]}")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sig.repeated_fields(), ["q", "count", "id"]);
        assert!(crate::schema::CompiledSchema::compile(&sig.output_schema()).is_err());
        assert!(parse("{a :int, b [{a :int}]}").unwrap_or_else(|e| panic!("{e}")).repeated_fields().is_empty());
    }

    #[test]
    fn earlier_eras() {
        let sig = parse_in("() -> [:any]", Era::V0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sig.output_schema_in(Era::V0), json!({"type": "array", "items": {}}));
        assert_eq!(sig.output_schema_in(Era::Early)["properties"]["items"]["items"], json!({}));
        assert_eq!(sig.output_schema_in(Era::JsonMode)["properties"]["items"]["items"], json!({"type": "object"}));
    }

    #[test]
    fn input_schema_is_the_params_as_an_object() {
        let sig = parse("(text :string, n :int?) -> :string").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            sig.input_schema(),
            json!({"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
                   "required": ["text"], "additionalProperties": false})
        );
        let none = parse(":string").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            none.input_schema(),
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
    }
}
