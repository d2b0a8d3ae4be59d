//! Twin derivation on every sample prompt pair: the json twin of each jsonl sample is its checked-in
//! `-json` sample, field for field and byte for byte once saved, and back again.

use std::path::Path;

use tunebench::compare::diff::{prompt_diff, Change};
use tunebench::compare::twin_of;
use tunebench::output::ResponseType;
use tunebench::prompt::file::PromptFile;

use crate::support::sample;

/// Every jsonl sample prompt that has a `-json` twin checked in.
fn pairs() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts");
    let mut pairs: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().strip_suffix("-json.toml")?.to_string();
            Some((name.clone(), format!("{name}-json")))
        })
        .collect();
    pairs.sort();
    pairs
}

#[test]
fn every_jsonl_sample_derives_its_checked_in_json_twin_and_back() {
    let pairs = pairs();
    let names: Vec<&str> = pairs.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "agent-kg-extract",
            "extract-definitions",
            "extract-relationships",
            "extract-rows",
            "extract-topics",
            "ontology-extract"
        ]
    );
    for (lines_name, array_name) in &pairs {
        let lines_path = sample(lines_name);
        let lines = PromptFile::load(&lines_path).unwrap();
        let array = PromptFile::load(sample(array_name)).unwrap();
        let dir = lines_path.parent().unwrap();
        let twin = twin_of(&lines, dir, ResponseType::Json).unwrap();
        assert_eq!(
            prompt_diff(&twin.prompt, &array),
            [],
            "{lines_name}: the derived json twin differs from {array_name}"
        );
        assert_eq!(twin.prompt, array, "{lines_name}");
        assert_eq!(twin.prompt.to_toml_string().unwrap(), array.to_toml_string().unwrap());
        assert!(twin.notes.iter().any(|n| n.contains("output-format sentence(s) swapped")), "{:?}", twin.notes);
        let back = twin_of(&array, dir, ResponseType::Jsonl).unwrap();
        assert_eq!(
            prompt_diff(&back.prompt, &lines),
            [],
            "{array_name}: the derived jsonl twin differs from {lines_name}"
        );
        assert_eq!(back.prompt, lines, "{array_name}");
    }
}

#[test]
fn the_twin_diff_shows_what_was_swapped_and_nothing_else() {
    let path = sample("extract-definitions");
    let prompt = PromptFile::load(&path).unwrap();
    let twin = twin_of(&prompt, path.parent().unwrap(), ResponseType::Json).unwrap();
    let diffs = prompt_diff(&prompt, &twin.prompt);
    let fields: Vec<&str> = diffs.iter().map(|d| d.field).collect();
    assert_eq!(fields, ["id", "description", "response_type", "template", "schema"]);
    let template = &diffs[3];
    let removed: Vec<&str> =
        template.lines.iter().filter(|l| l.change == Change::Removed).map(|l| l.text.as_str()).collect();
    assert!(removed[0].starts_with("Output format: JSONL."), "{removed:?}");
    let added: Vec<&str> =
        template.lines.iter().filter(|l| l.change == Change::Added).map(|l| l.text.as_str()).collect();
    assert_eq!(added.last(), Some(&"]"));
}

#[test]
fn a_twin_of_a_text_or_non_array_prompt_is_refused_by_name() {
    let mut prompt = PromptFile::new("greeting", "Say hello");
    let error = twin_of(&prompt, Path::new("."), ResponseType::Jsonl).unwrap_err().to_string();
    assert!(error.contains("`greeting` is a text prompt"), "{error}");
    prompt.response_type = ResponseType::Json;
    prompt.schema = Some(serde_json::json!({"type": "object"}));
    let error = twin_of(&prompt, Path::new("."), ResponseType::Jsonl).unwrap_err().to_string();
    assert!(error.contains("`greeting`") && error.contains("does not describe an array"), "{error}");
}

#[test]
fn a_schema_file_is_read_and_carried_inline_in_the_twin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("line.json"), r#"{"type": "object", "required": ["name"]}"#).unwrap();
    let text = "id = \"names\"\nresponse_type = \"jsonl\"\ntemplate = \"List names.\"\nschema_file = \"line.json\"\n";
    let path = dir.path().join("names.toml");
    std::fs::write(&path, text).unwrap();
    let prompt = PromptFile::load(&path).unwrap();
    let twin = twin_of(&prompt, dir.path(), ResponseType::Json).unwrap();
    assert_eq!(twin.prompt.id, "names-json");
    assert_eq!(twin.prompt.schema_file, None);
    assert_eq!(
        twin.prompt.schema,
        Some(serde_json::json!({"type": "array", "items": {"type": "object", "required": ["name"]}}))
    );
    assert!(twin.notes.iter().any(|n| n.contains("line.json read and carried inline")), "{:?}", twin.notes);
    assert!(twin.notes.iter().any(|n| n.contains("no known output-format sentence")), "{:?}", twin.notes);
    // Saved and read back, the twin is a prompt file like any other.
    let saved = dir.path().join("names-json.toml");
    twin.prompt.save(&saved).unwrap();
    assert_eq!(PromptFile::load(&saved).unwrap(), twin.prompt);
}
