//! PtcRunner signature cases: parse (against their AST in the fixtures' neutral form), errors,
//! signature → JSON Schema (per version), validation paths and messages, and the JSON-mode loop.

use serde_json::{json, Value};
use tunebench::prompt::signature::{self, json_mode, Era, PathSegment, SigType, Signature};

const KINDS: &[&str] =
    &["signature_parse", "signature_error", "signature_to_schema", "signature_validate", "json_mode"];

/// `Some` for the five PtcRunner signature kinds, `None` for every other case.
pub fn check(case: &Value) -> Option<Result<(), String>> {
    let kind = case["kind"].as_str()?;
    if case["project"] != "ptc_runner" || !KINDS.contains(&kind) {
        return None;
    }
    Some(match kind {
        "signature_parse" => parse_case(case),
        "signature_error" => error_case(case),
        "signature_to_schema" => schema_case(case),
        "signature_validate" => validate_case(case),
        _ => json_mode_case(case),
    })
}

/// The PtcRunner version a case pins (§2.4); cases without one follow the JSON-mode era.
fn era(case: &Value) -> Result<Era, String> {
    match case["version"].as_str() {
        None | Some("json_mode_era") => Ok(Era::JsonMode),
        Some("v0") => Ok(Era::V0),
        Some("early") => Ok(Era::Early),
        Some(later) if later.starts_with("later") => Ok(Era::Later),
        Some(other) => Err(format!("unknown version {other:?}")),
    }
}

fn text<'c>(case: &'c Value, field: &str) -> Result<&'c str, String> {
    case[field].as_str().ok_or_else(|| format!("case has no string {field:?}"))
}

fn parse(src: &str, era: Era) -> Result<Signature, String> {
    signature::parse_in(src, era).map_err(|error| format!("{src:?} does not parse:\n{error}"))
}

fn same(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

/// Their AST in neutral form: "string" | … | {"optional":T} | {"list":T} | {"map":[[name,T],…]}.
fn neutral(ty: &SigType) -> Value {
    match ty {
        SigType::Optional(inner) => json!({"optional": neutral(inner)}),
        SigType::List(inner) => json!({"list": neutral(inner)}),
        SigType::Fields(fields) => json!({"map": neutral_fields(fields)}),
        primitive => json!(primitive.keyword().unwrap_or("?")),
    }
}

fn neutral_fields(fields: &[(String, SigType)]) -> Value {
    Value::Array(fields.iter().map(|(name, ty)| json!([name, neutral(ty)])).collect())
}

fn neutral_signature(sig: &Signature) -> Value {
    json!({"params": neutral_fields(&sig.params), "returns": neutral(&sig.returns)})
}

fn parse_case(case: &Value) -> Result<(), String> {
    let sig = parse(text(case, "input")?, era(case)?)?;
    same("AST", &neutral_signature(&sig), &case["expected"])?;
    if case.get("derived_schema").is_some() {
        same("derived schema", &sig.output_schema(), &case["derived_schema"])?;
    }
    Ok(())
}

fn error_case(case: &Value) -> Result<(), String> {
    let input = text(case, "input")?;
    let error = match signature::parse_in(input, era(case)?) {
        Ok(sig) => return Err(format!("{input:?} parsed as {sig} but should fail")),
        Err(error) => error.to_string(),
    };
    let wanted = case["error_message_contains"].as_array().map(Vec::as_slice).unwrap_or_default();
    match wanted.iter().filter_map(Value::as_str).find(|part| !error.contains(part)) {
        Some(missing) => Err(format!("error lacks {missing:?}:\n{error}")),
        None => Ok(()),
    }
}

fn schema_case(case: &Value) -> Result<(), String> {
    let era = era(case)?;
    let sig = parse(text(case, "input")?, era)?;
    same("schema", &sig.output_schema_in(era), &case["expected"])
}

fn validate_case(case: &Value) -> Result<(), String> {
    let sig = match case["signature"].as_str() {
        Some(src) => parse(src, Era::JsonMode)?,
        None => {
            let sig = parse(text(case, "type_as_signature")?, Era::JsonMode)?;
            // The rendering is ours: make sure it is the AST their test used.
            same("type", &neutral(&sig.returns), &case["type"])?;
            sig
        }
    };
    let outcome = sig.validate_segments(&case["data"]);
    match (case["expected"].as_str(), outcome) {
        (Some("ok"), Ok(())) => Ok(()),
        (Some("ok"), Err(issues)) => Err(format!("should be valid, got {issues:?}")),
        (Some("error"), Ok(())) => Err("should be invalid".into()),
        (Some("error"), Err(issues)) => {
            let paths: Vec<Value> = issues
                .iter()
                .map(|issue| {
                    Value::Array(
                        issue
                            .path
                            .iter()
                            .map(|segment| match segment {
                                PathSegment::Field(name) => json!(name),
                                PathSegment::Index(index) => json!(index),
                            })
                            .collect(),
                    )
                })
                .collect();
            if let Some(want) = case.get("error_paths") {
                same("error paths", &Value::Array(paths), want)?;
            }
            match case["error_message_prefix"].as_str() {
                Some(prefix) if !issues.iter().all(|i| i.message.starts_with(prefix)) => {
                    Err(format!("messages {issues:?} do not all start with {prefix:?}"))
                }
                _ => Ok(()),
            }
        }
        (other, _) => Err(format!("unknown expected {other:?}")),
    }
}

fn json_mode_case(case: &Value) -> Result<(), String> {
    let sig = parse(text(case, "signature")?, Era::JsonMode)?;
    let answers: Vec<&str> =
        case["llm_responses"].as_array().ok_or("case has no llm_responses")?.iter().filter_map(Value::as_str).collect();
    let max_turns = case["max_turns"].as_u64().ok_or("case has no max_turns")? as usize;
    let (outcome, turns) = json_mode::run_turns(&sig, &answers, max_turns);
    if let Some(want) = case["turns"].as_u64() {
        same("turns", &json!(turns), &json!(want))?;
    }
    // Every retry's feedback says what went wrong and shows the expected fields.
    let first_failure = answers.first().and_then(|first| json_mode::accept(&sig, first).err().map(|e| (first, e)));
    if let Some((first, error)) = first_failure {
        let feedback = json_mode::feedback(&sig, first, &error);
        let mut needles = vec!["not valid JSON".to_owned(), error.to_string()];
        if let SigType::Fields(fields) = &sig.returns {
            needles.extend(fields.iter().map(|(name, _)| format!("\"{name}\"")));
        }
        if let Some(missing) = needles.iter().find(|needle| !feedback.contains(needle.as_str())) {
            return Err(format!("feedback lacks {missing:?}:\n{feedback}"));
        }
    }
    match (&case["expected"], outcome) {
        (Value::String(error), Err(got)) if error == "error" => {
            same("fail reason", &json!(got.reason()), &case["fail_reason"])?;
            match case["fail_message_contains"].as_str() {
                Some(part) if !got.to_string().contains(part) => {
                    Err(format!("fail message {:?} lacks {part:?}", got.to_string()))
                }
                _ => Ok(()),
            }
        }
        (want, Ok(value)) => same("return value", &value, want),
        (want, Err(error)) => Err(format!("want {want}, got {} ({error})", error.reason())),
    }
}
