//! TrustGraph `parse_json` (through `invoke`: the `trustgraph` profile of the json parser with the
//! prompt's schema as the check) and PtcRunner `extract_json` (the `ptc` profile) cases.

use std::sync::Arc;

use serde_json::Value;
use tunebench::output::json::{ptc_extract_json, JsonParser};
use tunebench::output::{JsonErrorKind, OutputParser, Profile, Report};
use tunebench::schema::{Check, CompiledSchema};

/// `Some` for `parse_json` and `extract_json` cases, `None` for every other case.
pub fn check(case: &Value) -> Option<Result<(), String>> {
    match case["kind"].as_str()? {
        "parse_json" => Some(parse_json(case)),
        "extract_json" => Some(extract_json(case)),
        _ => None,
    }
}

fn input(case: &Value) -> Result<&str, String> {
    case["input"].as_str().ok_or_else(|| "case has no string input".to_string())
}

/// TrustGraph validates only when the schema is truthy (`{}` and null are falsy in Python).
fn truthy(schema: &Value) -> bool {
    match schema {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        _ => true,
    }
}

fn parse_json(case: &Value) -> Result<(), String> {
    let check: Option<Arc<dyn Check>> = match &case["schema"] {
        schema if truthy(schema) => {
            Some(Arc::new(CompiledSchema::compile(schema).map_err(|error| format!("schema: {error}"))?))
        }
        _ => None,
    };
    let mut parser = JsonParser::new(Profile::Trustgraph, check);
    parser.feed(input(case)?);
    let Report::Json(report) = parser.report() else { return Err("not a json report".into()) };
    match case["error_message_contains"].as_str() {
        Some(needle) => match &report.error {
            Some(error) if !report.ok && error.message.contains(needle) => Ok(()),
            other => Err(format!("expected an error containing {needle:?}, got {other:?} (value {:?})", report.value)),
        },
        None if report.ok && report.value.as_ref() == Some(&case["expected"]) => Ok(()),
        None => Err(format!("expected {}, got {:?} / {:?}", case["expected"], report.value, report.error)),
    }
}

fn extract_json(case: &Value) -> Result<(), String> {
    let text = input(case)?;
    let got = ptc_extract_json(text);
    let expected = match case["error"].as_str() {
        Some("no_json_found") => Err(JsonErrorKind::NoJsonFound),
        Some("invalid_json") => Err(JsonErrorKind::InvalidJson),
        Some(other) => return Err(format!("unknown error kind {other:?}")),
        None => Ok(case["expected"].clone()),
    };
    if got != expected {
        return Err(format!("expected {expected:?}, got {got:?}"));
    }
    // The parser under the ptc profile says the same.
    let mut parser = JsonParser::new(Profile::Ptc, None);
    parser.feed(text);
    let Report::Json(report) = parser.report() else { return Err("not a json report".into()) };
    let from_parser = match (report.value, report.error) {
        (Some(value), _) => Ok(value),
        (None, Some(error)) => Err(error.kind),
        (None, None) => return Err("no value and no error".into()),
    };
    if from_parser != expected {
        return Err(format!("the ptc parser gives {from_parser:?}, expected {expected:?}"));
    }
    Ok(())
}
