//! A parse report read back from the JSON its `Serialize` writes (a turn of a history record): the
//! report's `response_type` says which of the three it is, and which fields it must have.
//!
//! What the written form does not say is read back as the report meant it: a `json` report writes
//! `"value": null` both when there is no value and when the answer was `null`; it reads as no value
//! when the report's error says none was found or read (`no_json_found`, `invalid_json`), else as the
//! value `null`. A `jsonl` report's items read back as values ([`Items`]), equal to those written.

use serde::de::{Deserialize, Deserializer, Error};
use serde_json::Value;

use super::{Items, JsonError, JsonErrorKind, JsonReport, JsonlReport, LineVerdict, Profile, Repair, Report};
use super::{ResponseType, Summary, TextReport};
use crate::schema::SchemaIssue;

/// Every field any report writes; which ones must be there depends on `response_type`. Fields no
/// report writes are ignored.
#[derive(serde::Deserialize)]
struct Fields {
    response_type: ResponseType,
    profile: Profile,
    text: Option<String>,
    ok: Option<bool>,
    #[serde(default, deserialize_with = "written")]
    value: Option<Value>,
    branch: Option<String>,
    error: Option<JsonError>,
    #[serde(default)]
    errors: Vec<SchemaIssue>,
    #[serde(default)]
    repairs: Vec<Repair>,
    items: Option<Items>,
    lines: Option<Vec<LineVerdict>>,
    summary: Option<Summary>,
}

/// A field that is there, `null` included.
fn written<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

fn needed<T, E: Error>(field: Option<T>, name: &'static str) -> Result<T, E> {
    field.ok_or_else(|| E::missing_field(name))
}

impl<'de> Deserialize<'de> for Report {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = Fields::deserialize(deserializer)?;
        let (response_type, profile) = (fields.response_type, fields.profile);
        Ok(match response_type {
            ResponseType::Text => {
                Report::Text(TextReport { response_type, profile, text: needed(fields.text, "text")? })
            }
            ResponseType::Json => {
                let no_value = fields.error.as_ref().is_some_and(|error| error.kind != JsonErrorKind::SchemaError);
                Report::Json(JsonReport {
                    response_type,
                    profile,
                    ok: needed(fields.ok, "ok")?,
                    value: fields.value.filter(|value| !(no_value && value.is_null())),
                    branch: fields.branch,
                    error: fields.error,
                    errors: fields.errors,
                    repairs: fields.repairs,
                })
            }
            ResponseType::Jsonl => Report::Jsonl(JsonlReport {
                response_type,
                profile,
                items: needed(fields.items, "items")?,
                lines: needed(fields.lines, "lines")?,
                summary: needed(fields.summary, "summary")?,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::output::parse;
    use crate::schema::{Check, CompiledSchema};

    fn read_back(report: &Report) -> Report {
        serde_json::from_str(&serde_json::to_string(report).unwrap()).unwrap()
    }

    #[test]
    fn every_kind_of_report_reads_back_equal() {
        let check: Arc<dyn Check> =
            Arc::new(CompiledSchema::compile(&json!({"type": "object", "required": ["a"]})).unwrap());
        let answers = [
            (ResponseType::Text, "just text\n"),
            (ResponseType::Json, "```json\n{\"a\": [1, 2"),
            (ResponseType::Json, "{\"b\": 1}"),
            (ResponseType::Json, "no json here"),
            (ResponseType::Json, "null"),
            (ResponseType::Jsonl, "{\"a\": 1}\n{\"a\": 2,}\n{\"b\": 3}\n{\"a\": \nprose\n[{\"a\": 4}, {\"a\": 5}]\n"),
        ];
        for (response_type, answer) in answers {
            for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc] {
                let report = parse(response_type, profile, Some(Arc::clone(&check)), answer);
                assert_eq!(read_back(&report), report, "{response_type:?} {profile:?} {answer:?}");
            }
        }
    }

    #[test]
    fn a_null_value_is_the_answer_null_unless_no_value_was_read() {
        let answer_null = parse(ResponseType::Json, Profile::Strict, None, "null");
        assert!(matches!(read_back(&answer_null), Report::Json(r) if r.value == Some(Value::Null)));
        let none = parse(ResponseType::Json, Profile::Strict, None, "{\"a\": ");
        assert!(matches!(read_back(&none), Report::Json(r) if r.value.is_none()));
    }

    #[test]
    fn a_report_without_its_fields_is_named() {
        let error = serde_json::from_value::<Report>(json!({"response_type": "jsonl", "profile": "lenient"}));
        assert!(error.unwrap_err().to_string().contains("missing field `items`"));
        let error = serde_json::from_value::<Report>(json!({"response_type": "yaml", "profile": "lenient"}));
        assert!(error.unwrap_err().to_string().contains("unknown variant `yaml`"));
    }
}
