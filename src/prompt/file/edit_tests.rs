//! Tests of saving in place: every sample prompt and hand-written files round-trip byte for byte, and
//! an edit rewrites only the lines of what changed.

use std::path::Path;

use serde_json::json;
use similar::{ChangeTag, TextDiff};

use super::super::{OnDisk, PromptFile};

/// A hand-written prompt: comments everywhere, every quoting style, inline tables and arrays, odd
/// spacing, a dotted key, a schema as a TOML table.
const HAND_WRITTEN: &str = r#"# Invoice line items, kept in git.
id   =   "invoice-lines"   # the id
description = 'Line items of an invoice'
response_type = "jsonl"
system = """
You read invoices.
Be "precise"."""
template = '''
Extract every line item of the invoice below.

<invoice>
{{text}}
</invoice>
'''

  # the schema, as a table
[schema]
type = "object"
required = ["sku", "qty"]   # both
properties.sku = { type = "string" }
properties.qty = {type="integer", minimum=1}

[variables]
text = "2 x widget (W-1) at 3.50"
tags = [ "a",  'b' ]

[provider]
temperature=0.0
max_tokens = 512 # enough

[eval]
match = "sku"

# one check for all
[[checks]]
kind = "range"
path = "/qty"
min = 1

[[cases]]
name = "two-lines"
expect = "two items"
variables = { text = "W-1 x2\nW-2 x1" }
[cases.expected]
items = [
  {sku = "W-1", qty = 2},   # first
  {sku = "W-2", qty = 1},
]

[[cases]]
name = 'empty'
variables.text = "nothing here"
[cases.expected]
items = []
"#;

fn read(text: &str) -> OnDisk {
    let prompt = PromptFile::from_toml_str(text, Path::new("dir/p.toml")).unwrap();
    OnDisk { text: text.to_string(), prompt }
}

/// The lines of `before` that an edit to `after` removed, and the lines it added (1-based).
fn changed_lines(before: &str, after: &str) -> (Vec<usize>, Vec<String>) {
    let diff = TextDiff::from_lines(before, after);
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Delete => removed.push(change.old_index().unwrap() + 1),
            ChangeTag::Insert => added.push(change.value().to_string()),
            ChangeTag::Equal => {}
        }
    }
    (removed, added)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle:?} not in the text")) + 1
}

#[test]
fn every_sample_prompt_round_trips_byte_for_byte() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let on_disk = PromptFile::read(&path).unwrap();
        let unchanged = on_disk.prompt.clone();
        assert_eq!(on_disk.edited(&unchanged, None).unwrap(), on_disk.text, "{}", path.display());
        // The editor itself keeps every byte of a document it was not asked to change.
        let doc: toml_edit::DocumentMut = on_disk.text.parse().unwrap();
        assert_eq!(doc.to_string(), on_disk.text, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 13, "{seen} sample prompts");
}

#[test]
fn hand_written_files_round_trip_byte_for_byte() {
    let crlf = HAND_WRITTEN.replace('\n', "\r\n");
    let bom = format!("\u{feff}{HAND_WRITTEN}");
    for text in [HAND_WRITTEN, crlf.as_str(), bom.as_str()] {
        let on_disk = read(text);
        assert_eq!(on_disk.edited(&on_disk.prompt.clone(), None).unwrap(), text);
    }
}

#[test]
fn one_character_typed_into_the_template_changes_only_the_template() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.template = new.template.replace("every line item", "every line item, in order,");
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "Extract every line item")]);
    assert_eq!(added, vec!["Extract every line item, in order, of the invoice below.\n".to_string()]);
    assert!(text.contains("template = '''\n"), "the literal style is kept:\n{text}");
}

#[test]
fn a_basic_multiline_string_keeps_its_style_and_escapes() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.system = Some("You read invoices.\nBe \"precise\" and \\ careful.".into());
    let text = on_disk.edited(&new, None).unwrap();
    assert!(text.contains("system = \"\"\"\nYou read invoices.\nBe \"precise\" and \\\\ careful.\"\"\"\n"), "{text}");
    let back = PromptFile::from_toml_str(&text, Path::new("dir/p.toml")).unwrap();
    assert_eq!(back.system, new.system);
    let (_, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(added.len(), 1, "{added:?}");
}

#[test]
fn a_single_line_literal_string_that_gains_a_quote_becomes_basic() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.description = Some("An invoice's line items".into());
    let text = on_disk.edited(&new, None).unwrap();
    assert!(text.contains("description = \"An invoice's line items\"\n"), "{text}");
    new.description = Some("Line items, all of them".into());
    let text = on_disk.edited(&new, None).unwrap();
    assert!(text.contains("description = 'Line items, all of them'\n"), "{text}");
}

#[test]
fn a_changed_value_keeps_its_comment_and_spacing() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.provider.max_tokens = Some(2048);
    new.provider.temperature = Some(0.5);
    let text = on_disk.edited(&new, None).unwrap();
    assert!(text.contains("max_tokens = 2048 # enough\n"), "{text}");
    assert!(text.contains("temperature=0.5\n"), "{text}");
    let (removed, _) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed.len(), 2);
}

#[test]
fn approving_one_case_changes_only_that_case() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.approve("empty", &json!([{"sku": "Z-9", "qty": 3}]), Vec::new()).unwrap();
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "items = []")]);
    assert_eq!(added, vec!["items = [{ sku = \"Z-9\", qty = 3 }]\n".to_string()], "{text}");
    // One item of the other case: only its line.
    let mut new = on_disk.prompt.clone();
    new.approve("two-lines", &json!([{"sku": "W-1", "qty": 2}, {"sku": "W-2", "qty": 5}]), Vec::new()).unwrap();
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "{sku = \"W-2\", qty = 1},")]);
    assert_eq!(added, vec!["  {sku = \"W-2\", qty = 5},\n".to_string()]);
}

#[test]
fn an_insisted_approve_writes_what_it_left_out_beside_the_items_of_that_case_alone() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    let left_out = vec!["line 2: not valid JSON (EOF while parsing a string)".to_string()];
    new.approve("empty", &json!([{"sku": "Z-9", "qty": 3}]), left_out.clone()).unwrap();
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "items = []")], "{text}");
    assert_eq!(
        added,
        vec![
            "items = [{ sku = \"Z-9\", qty = 3 }]\n".to_string(),
            "left_out = [\n".to_string(),
            "  \"line 2: not valid JSON (EOF while parsing a string)\",\n".to_string(),
            "]\n".to_string(),
        ],
        "{text}"
    );
    let back = PromptFile::from_toml_str(&text, Path::new("dir/p.toml")).unwrap();
    assert_eq!(back.cases[1].expected.as_ref().unwrap().left_out, left_out);
}

#[test]
fn approving_a_long_answer_into_an_empty_list_lays_it_out_one_item_a_line() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    let answer = json!([
        {"sku": "A-100", "qty": 1, "note": "the first of several long items"},
        {"sku": "B-200", "qty": 2, "note": "the second"},
    ]);
    new.approve("empty", &answer, Vec::new()).unwrap();
    let text = on_disk.edited(&new, None).unwrap();
    assert!(
        text.contains(
            "items = [\n  { sku = \"A-100\", qty = 1, note = \"the first of several long items\" },\n  { sku = \"B-200\", qty = 2, note = \"the second\" },\n]\n"
        ),
        "{text}"
    );
    let back = PromptFile::from_toml_str(&text, Path::new("dir/p.toml")).unwrap();
    assert_eq!(back.cases[1].expected.as_ref().unwrap().items.as_ref().unwrap(), answer.as_array().unwrap());
}

#[test]
fn approving_every_sample_case_changes_only_that_case() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/extract-rows.toml");
    let on_disk = PromptFile::read(&path).unwrap();
    for (index, case) in on_disk.prompt.cases.iter().enumerate() {
        let mut new = on_disk.prompt.clone();
        new.approve(&case.name, &json!([{"name": "x", "price": 1.0, "currency": "EUR", "in_stock": true}]), Vec::new())
            .unwrap();
        let text = on_disk.edited(&new, None).unwrap();
        let (removed, _) = changed_lines(&on_disk.text, &text);
        // The case's lines run from its `[[cases]]` header to the next one.
        let starts: Vec<usize> =
            on_disk.text.lines().enumerate().filter(|(_, l)| *l == "[[cases]]").map(|(i, _)| i + 1).collect();
        let (first, end) = (starts[index], starts.get(index + 1).copied().unwrap_or(usize::MAX));
        assert!(
            !removed.is_empty() && removed.iter().all(|l| (first..end).contains(l)),
            "{:?}: {removed:?}",
            case.name
        );
    }
}

#[test]
fn a_case_added_is_appended_and_one_deleted_removes_only_its_lines() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    let mut copy = new.cases[0].clone();
    copy.name = "two-lines copy".into();
    new.cases.push(copy);
    let text = on_disk.edited(&new, None).unwrap();
    assert!(text.starts_with(HAND_WRITTEN), "{text}");
    let back = PromptFile::from_toml_str(&text, Path::new("dir/p.toml")).unwrap();
    assert_eq!(back.cases, new.cases);
    // A copy lands right after its original, the rest untouched.
    let copy = new.cases.pop().unwrap();
    new.cases.insert(1, copy);
    let text = on_disk.edited(&new, None).unwrap();
    let back = PromptFile::from_toml_str(&text, Path::new("dir/p.toml")).unwrap();
    assert_eq!(back.cases, new.cases);
    let (removed, _) = changed_lines(HAND_WRITTEN, &text);
    assert!(removed.is_empty(), "{removed:?}\n{text}");
    let first = new.cases.remove(0);
    new.cases.insert(1, first.clone());
    new.cases.insert(
        0,
        PromptFile::from_toml_str("template = 'x'\n[[cases]]\nname = 'lead'\n", Path::new("p.toml"))
            .unwrap()
            .cases
            .remove(0),
    );
    let back = PromptFile::from_toml_str(&on_disk.edited(&new, None).unwrap(), Path::new("dir/p.toml")).unwrap();
    assert_eq!(
        back.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["lead", "two-lines copy", "two-lines", "empty"]
    );

    let mut new = on_disk.prompt.clone();
    new.cases.remove(0);
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert!(added.is_empty(), "{added:?}");
    let first = line_of(HAND_WRITTEN, "name = \"two-lines\"") - 1;
    let next = line_of(HAND_WRITTEN, "name = 'empty'") - 1;
    // (A diff may count the next case's identical `[[cases]]` header as the one removed.)
    assert!(removed.len() == next - first && removed.iter().all(|l| (first..=next).contains(l)), "{removed:?}\n{text}");
}

#[test]
fn a_renamed_case_is_renamed_where_it_is() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.cases[0].name = "two lines".into();
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "name = \"two-lines\"")]);
    assert_eq!(added, vec!["name = \"two lines\"\n".to_string()]);
}

#[test]
fn a_variable_in_an_array_of_tables_changes_only_its_line() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/extract-rows.toml");
    let on_disk = PromptFile::read(&path).unwrap();
    let mut new = on_disk.prompt.clone();
    new.variables["fields"][1]["description"] = json!("the unit price");
    new.variables.insert("table".into(), json!("item"));
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(&on_disk.text, &text);
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert_eq!(added, vec!["table = \"item\"\n".to_string(), "description = \"the unit price\"\n".to_string()]);
}

#[test]
fn the_schema_is_written_as_the_author_typed_it_in_its_own_quoting() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts/extract-rows.toml");
    let on_disk = PromptFile::read(&path).unwrap();
    let written = on_disk.text.split("schema = '''\n").nth(1).unwrap().split("'''").next().unwrap().to_string();
    let typed = written.replace(
        "\"in_stock\": {\"type\": \"boolean\"}",
        "\"in_stock\": {\"type\": \"boolean\"},\n    \"sku\": {\"type\": \"string\"}",
    );
    let mut new = on_disk.prompt.clone();
    new.schema = Some(serde_json::from_str(&typed).unwrap());
    let text = on_disk.edited(&new, Some(&typed)).unwrap();
    let (removed, added) = changed_lines(&on_disk.text, &text);
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(
        added,
        vec![
            "    \"in_stock\": {\"type\": \"boolean\"},\n".to_string(),
            "    \"sku\": {\"type\": \"string\"}\n".to_string()
        ]
    );
    // Unchanged text, unchanged file; whitespace typed in the pane is the author's to keep.
    assert_eq!(on_disk.edited(&on_disk.prompt.clone(), Some(&written)).unwrap(), on_disk.text);
    let spaced = written.replacen("{\n", "{\n\n", 1);
    let text = on_disk.edited(&on_disk.prompt.clone(), Some(&spaced)).unwrap();
    assert_eq!(changed_lines(&on_disk.text, &text).1, vec!["\n".to_string()]);
}

#[test]
fn a_schema_written_as_a_table_is_edited_as_one() {
    let on_disk = read(HAND_WRITTEN);
    let mut new = on_disk.prompt.clone();
    new.schema.as_mut().unwrap()["properties"]["qty"]["minimum"] = json!(0);
    let text = on_disk.edited(&new, None).unwrap();
    let (removed, added) = changed_lines(HAND_WRITTEN, &text);
    assert_eq!(removed, vec![line_of(HAND_WRITTEN, "properties.qty")]);
    assert_eq!(added, vec!["properties.qty = {type=\"integer\", minimum=0}\n".to_string()]);
}

#[test]
fn saving_refuses_a_file_changed_on_disk_and_writes_through_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.toml");
    std::fs::write(&real, HAND_WRITTEN).unwrap();
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let on_disk = PromptFile::read(&link).unwrap();
    let mut new = on_disk.prompt.clone();
    new.description = Some("edited".into());

    // Changed outside: nothing written, the outside edit kept.
    let outside = HAND_WRITTEN.replace("id   =   \"invoice-lines\"", "id = \"renamed-outside\"");
    std::fs::write(&real, &outside).unwrap();
    let err = on_disk.save(&link, &new, None).unwrap_err();
    assert!(matches!(err, super::PromptError::ChangedOutside { .. }), "{err}");
    assert!(err.to_string().contains("changed on disk"), "{err}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), outside);
    assert_eq!(on_disk.changed_on_disk(&link).as_deref(), Some(outside.as_str()));

    // Back as it was read: saved through the link, which stays a link.
    std::fs::write(&real, HAND_WRITTEN).unwrap();
    let saved = on_disk.save(&link, &new, None).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), saved.text);
    assert_eq!(saved.prompt.description.as_deref(), Some("edited"));
    assert!(saved.text.contains("description = 'edited'\n"));
    assert_eq!(on_disk.changed_on_disk(&link).as_deref(), Some(saved.text.as_str()));
    assert_eq!(saved.changed_on_disk(&link), None);
}
