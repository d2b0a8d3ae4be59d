//! The dataset readers: the same cases from JSONL, CSV and YAML as `[[cases]]` gives, and every bad
//! row an error at its file:line (and CSV column).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

const PROMPT: &str = r#"id = "definitions"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}'''

[[cases]]
name = "alpha"
variables = { text = "ALPHA-TEXT" }
[cases.expected]
items = [{ entity = "Alpha", definition = "The first letter." }]
[[cases.checks]]
kind = "items"
min = 1
"#;

fn write(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn cases_of(path: &Path) -> Result<Vec<Case>, DatasetError> {
    let mut cases = Vec::new();
    read(path, |case, _| {
        cases.push(case);
        Ok(())
    })?;
    Ok(cases)
}

fn error_of(dir: &Path, name: &str, text: &[u8]) -> String {
    let path = write(dir, name, text);
    match cases_of(&path) {
        Ok(cases) => panic!("{name} read as {} cases", cases.len()),
        Err(e) => e.to_string(),
    }
}

/// The inline case `alpha` of [`PROMPT`], as the TOML reader gives it.
fn inline_alpha() -> Case {
    let prompt = PromptFile::from_toml_str(PROMPT, Path::new("p.toml")).unwrap();
    prompt.cases[0].clone()
}

#[test]
fn the_three_formats_give_the_case_toml_gives() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = write(
        dir.path(),
        "a.jsonl",
        br#"{"name": "alpha", "vars": {"text": "ALPHA-TEXT"}, "expected": [{"entity": "Alpha", "definition": "The first letter."}], "checks": [{"kind": "items", "min": 1}]}
"#,
    );
    let flat = write(
        dir.path(),
        "b.jsonl",
        "\u{feff}{\"__description\": \"alpha\", \"text\": \"ALPHA-TEXT\", \"expected\": [{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}], \"checks\": [{\"kind\": \"items\", \"min\": 1}]}\r\n\n"
            .as_bytes(),
    );
    let csv = write(
        dir.path(),
        "c.csv",
        b"name,text,expected,checks\nalpha,ALPHA-TEXT,\"[{\"\"entity\"\": \"\"Alpha\"\", \"\"definition\"\": \"\"The first letter.\"\"}]\",\"[{\"\"kind\"\": \"\"items\"\", \"\"min\"\": 1}]\"\n",
    );
    let yaml = write(
        dir.path(),
        "d.yaml",
        b"# cases\n- name: alpha\n  vars:\n    text: ALPHA-TEXT\n  expected:\n    - entity: Alpha\n      definition: The first letter.\n  checks:\n    - kind: items\n      min: 1\n",
    );
    let want = inline_alpha();
    for path in [&jsonl, &flat, &csv, &yaml] {
        let cases = cases_of(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cases, vec![want.clone()], "{}", path.display());
    }
    // The place of the expected answer and the checks is the row's line.
    let yaml_case = &cases_of(&yaml).unwrap()[0];
    let place = yaml_case.expected.as_ref().unwrap().at.0.clone().unwrap();
    assert_eq!((place.path.as_path(), place.line), (yaml.as_path(), 2));
}

#[test]
fn names_default_to_the_line_and_promptfoo_columns_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(
        dir.path(),
        "t.csv",
        b"text,__expected,__description\nhello,\"{\"\"a\"\": 1}\",greeting\nbye,,\n\"multi\nline\",,\n",
    );
    let cases = cases_of(&csv).unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["greeting", "line-3", "line-4"]);
    assert_eq!(cases[0].expected.as_ref().unwrap().value, Some(json!({"a": 1})));
    assert_eq!(cases[1].expected, None, "an empty cell is no expected answer");
    assert_eq!(cases[2].variables["text"], json!("multi\nline"));
}

#[test]
fn each_bad_row_is_an_error_at_its_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let at = |name: &str| d.join(name).display().to_string();
    let error = error_of(d, "bad.csv", b"text,expected\nok,[1]\nx,\"[1, \"\n");
    assert!(error.starts_with(&format!("{}:3: column `expected`: ", at("bad.csv"))), "{error}");
    assert!(error.contains("not JSON"), "{error}");
    let error = error_of(d, "dup.jsonl", b"{\"name\": \"a\"}\n{\"name\": \"b\"}\n{\"name\": \"a\"}\n");
    assert_eq!(error, format!("{}:3: a second case named \"a\" (the first is on line 1)", at("dup.jsonl")));
    let error = error_of(d, "list.jsonl", b"{\"text\": \"a\"}\n[1, 2]\n");
    assert!(error.starts_with(&format!("{}:2: expected a JSON object", at("list.jsonl"))), "{error}");
    let error = error_of(d, "notjson.jsonl", b"{\"text\": \"a\"}\n{text}\n");
    assert!(error.starts_with(&format!("{}:2: not JSON", at("notjson.jsonl"))), "{error}");
    let error = error_of(d, "latin1.jsonl", b"{\"text\": \"a\"}\n{\"text\": \"caf\xe9\"}\n");
    assert_eq!(error, format!("{}:2:14: not UTF-8 (byte 0xe9); a dataset is UTF-8 text", at("latin1.jsonl")));
    let error = error_of(d, "latin1.csv", b"text\ncaf\xe9\n");
    assert!(error.starts_with(&format!("{}:2: column `text`: not UTF-8 (byte 0xe9)", at("latin1.csv"))), "{error}");
    let error = error_of(d, "latin1.yaml", b"- text: caf\xe9\n");
    assert!(error.starts_with(&format!("{}:1:12: not UTF-8", at("latin1.yaml"))), "{error}");
    let long = format!("{{\"text\": \"{}\"}}\n", "x".repeat(ROW_BYTES));
    let error = error_of(d, "long.jsonl", format!("{{\"text\": \"a\"}}\n{long}").as_bytes());
    assert!(error.starts_with(&format!("{}:2: a row longer than", at("long.jsonl"))), "{error}");
    let error = error_of(d, "long.csv", format!("text\na\n{}\n", "y".repeat(ROW_BYTES + 1)).as_bytes());
    assert!(error.starts_with(&format!("{}:3: a row longer than", at("long.csv"))), "{error}");
    let error = error_of(d, "wide.csv", b"a,b\n1,2\n1,2,3\n");
    assert!(error.starts_with(&format!("{}:3: a row of 3 cells", at("wide.csv"))), "{error}");
    let error = error_of(d, "check.jsonl", b"{\"text\": \"a\", \"checks\": [{\"kind\": \"nope\"}]}\n");
    assert!(
        error.starts_with(&format!("{}:1: key `checks`: check 1: unknown check kind", at("check.jsonl"))),
        "{error}"
    );
    let error = error_of(d, "prompfoo.csv", b"text,__expected\na,contains: foo\n");
    assert!(
        error.starts_with(&format!("{}:2: column `__expected`: \"contains: foo\" is not JSON", at("prompfoo.csv"))),
        "{error}"
    );
    let error = error_of(d, "scalar.yaml", b"- text: a\n- 7\n");
    assert!(error.starts_with(&format!("{}:2: a row is a mapping", at("scalar.yaml"))), "{error}");
    let error = error_of(d, "extra.jsonl", b"{\"vars\": {\"text\": \"a\"}, \"assert\": []}\n");
    assert!(error.starts_with(&format!("{}:1: key `assert`: unknown beside `vars`", at("extra.jsonl"))), "{error}");
    let error = error_of(d, "empty.jsonl", b"\n\n");
    assert_eq!(error, format!("{}: no rows: a dataset holds at least one case", at("empty.jsonl")));
    let error = error_of(d, "cases.txt", b"a\n");
    assert!(error.contains("a .jsonl, .csv or .yaml"), "{error}");
}

#[test]
fn a_dataset_joins_the_inline_cases_checked_against_the_template_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prompt_path = d.join("p.toml");
    let text = format!("cases_file = \"cases.jsonl\"\n{PROMPT}");
    write(d, "cases.jsonl", b"{\"name\": \"beta\", \"text\": \"BETA\"}\n{\"name\": \"gamma\", \"text\": \"G\"}\n");
    let mut prompt = PromptFile::from_toml_str(&text, &prompt_path).unwrap();
    assert_eq!(read_into(&mut prompt, &prompt_path, d, None, &Variables::new()).unwrap(), 2);
    let names: Vec<&str> = prompt.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma"]);
    assert_eq!(prompt.inline_cases().len(), 1);
    assert_eq!(prompt.dataset.as_ref().map(|d| d.lines.clone()), Some(vec![1, 2]));
    assert_eq!(prompt.render(Some("gamma"), &Variables::new()).unwrap().user, "Define every entity in: G");
    // A save writes the inline case alone, and the `cases_file` key.
    let saved = prompt.to_toml_string().unwrap();
    assert!(saved.contains("cases_file = \"cases.jsonl\"") && !saved.contains("gamma"), "{saved}");

    // A row without the variable the template needs, after a good one: nothing is added.
    let cases =
        write(d, "cases.jsonl", b"{\"name\": \"beta\", \"text\": \"BETA\"}\n\n{\"name\": \"gamma\", \"txt\": \"G\"}\n");
    let mut prompt = PromptFile::from_toml_str(&text, &prompt_path).unwrap();
    let error = read_into(&mut prompt, &prompt_path, d, None, &Variables::new()).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{}:3: the template (line 1) needs the variable `text`", cases.display())),
        "{error}"
    );
    assert_eq!(prompt.cases.len(), 1);
    // --var gives it.
    let given = Variables::from_iter([("text".to_string(), json!("x"))]);
    assert_eq!(read_into(&mut prompt, &prompt_path, d, None, &given).unwrap(), 2);

    // A name the inline cases hold already: both places named.
    write(d, "cases.jsonl", b"{\"name\": \"alpha\", \"text\": \"A\"}\n");
    let mut prompt = PromptFile::from_toml_str(&text, &prompt_path).unwrap();
    let error = read_into(&mut prompt, &prompt_path, d, None, &Variables::new()).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "{}:1: a case named \"alpha\" is also in the [[cases]] of {}; a dataset's names differ from the prompt's",
            cases.display(),
            prompt_path.display()
        )
    );
}

#[test]
fn a_cases_file_stays_inside_the_prompts_folder() {
    let dir = tempfile::tempdir().unwrap();
    let prompt_path = dir.path().join("p.toml");
    for name in ["../cases.jsonl", "/etc/cases.jsonl"] {
        let text = format!("cases_file = \"{name}\"\n{PROMPT}");
        let error = PromptFile::from_toml_str(&text, &prompt_path).unwrap_err().to_string();
        assert!(error.starts_with(&format!("{}:1:", prompt_path.display())), "{error}");
        assert!(error.contains("`cases_file`") && error.contains("stay inside its folder"), "{error}");
    }
    #[cfg(unix)]
    {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "cases.jsonl", b"{\"text\": \"a\"}\n");
        std::os::unix::fs::symlink(outside.path().join("cases.jsonl"), dir.path().join("cases.jsonl")).unwrap();
        let text = format!("cases_file = \"cases.jsonl\"\n{PROMPT}");
        let mut prompt = PromptFile::from_toml_str(&text, &prompt_path).unwrap();
        let error = read_into(&mut prompt, &prompt_path, dir.path(), None, &Variables::new()).unwrap_err().to_string();
        assert!(error.contains("outside the folder"), "{error}");
    }
}

#[test]
fn an_approved_answer_changes_only_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let jsonl_text = "{\"name\": \"a\",  \"text\": \"x\"}\r\n\n{\"text\": \"y\", \"expected\": [1]}\n{\"name\": \"c\", \"text\": \"z\"}";
    let jsonl = write(d, "cases.jsonl", jsonl_text.as_bytes());
    let before = cases_of(&jsonl).unwrap();
    write_expected(&jsonl, "line-3", &json!([{"k": "v"}])).unwrap();
    let after = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(
        after,
        "{\"name\": \"a\",  \"text\": \"x\"}\r\n\n{\"text\":\"y\",\"expected\":[{\"k\":\"v\"}]}\n{\"name\": \"c\", \"text\": \"z\"}"
    );
    let now = cases_of(&jsonl).unwrap();
    assert_eq!(now[1].expected.as_ref().unwrap().items, Some(vec![json!({"k": "v"})]));
    assert_eq!((&now[0], &now[2]), (&before[0], &before[2]), "the other rows read the same");
    write_expected(&jsonl, "c", &json!({"v": 1})).unwrap();
    assert!(std::fs::read_to_string(&jsonl)
        .unwrap()
        .ends_with("{\"name\":\"c\",\"text\":\"z\",\"expected\":{\"v\":1}}"));

    let csv_text = "name,text,expected\r\na,\"two\r\nlines\",\nb,\"say \"\"hi\"\"\",[]\r\nc,z,\n";
    let csv = write(d, "cases.csv", csv_text.as_bytes());
    write_expected(&csv, "b", &json!([{"q": "a \"quote\", a comma"}])).unwrap();
    let after = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        after,
        "name,text,expected\r\na,\"two\r\nlines\",\nb,\"say \"\"hi\"\"\",\"[{\"\"q\"\":\"\"a \\\"\"quote\\\"\", a comma\"\"}]\"\r\nc,z,\n"
    );
    let rows = cases_of(&csv).unwrap();
    assert_eq!(rows[1].expected.as_ref().unwrap().items, Some(vec![json!({"q": "a \"quote\", a comma"})]));
    assert_eq!(rows[0].variables["text"], json!("two\r\nlines"));

    // Nothing written when the row or the column is not there.
    let error = write_expected(&csv, "nobody", &json!(1)).unwrap_err().to_string();
    assert!(error.contains("no row is the case \"nobody\""), "{error}");
    let plain = write(d, "plain.csv", b"text\nx\n");
    let error = write_expected(&plain, "line-2", &json!(1)).unwrap_err().to_string();
    assert!(error.contains("no `expected` column"), "{error}");
    assert_eq!(std::fs::read(&plain).unwrap(), b"text\nx\n");
}

#[test]
fn reading_and_writing_the_same_answer_back_keeps_the_file_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"name\":\"a\",\"text\":\"x\",\"expected\":[1,2]}\n{\"name\":\"b\",\"text\":\"y\"}\n";
    let jsonl = write(dir.path(), "same.jsonl", text.as_bytes());
    write_expected(&jsonl, "a", &json!([1, 2])).unwrap();
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), text);
    let text = "name,expected\na,\"[1,2]\"\nb,\n";
    let csv = write(dir.path(), "same.csv", text.as_bytes());
    write_expected(&csv, "a", &json!([1, 2])).unwrap();
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), text);
}

#[test]
fn edited_variables_change_only_their_rows_in_one_write() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = "{\"name\": \"a\", \"text\": \"x\", \"lang\": \"en\", \"expected\": [1]}\n{\"name\":\"b\",\"vars\":{\"text\":\"y\",\"lang\":\"fr\"}}\n{\"name\": \"c\", \"text\": \"z\"}\n";
    let jsonl = write(d, "cases.jsonl", text.as_bytes());
    let before = cases_of(&jsonl).unwrap();
    let mut a = before[0].variables.clone();
    a.insert("text".into(), json!("x2"));
    a.remove("lang");
    a.insert("extra".into(), json!(3));
    let mut b = before[1].variables.clone();
    b.insert("lang".into(), json!("de"));
    let edits = [
        RowEdit { case: "a", was: Some(&before[0]), variables: Some(&a), expected: None },
        RowEdit { case: "b", was: Some(&before[1]), variables: Some(&b), expected: None },
    ];
    write_rows(&jsonl, &edits).unwrap();
    let after = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(
        after,
        "{\"name\":\"a\",\"text\":\"x2\",\"expected\":[1],\"extra\":3}\n{\"name\":\"b\",\"vars\":{\"text\":\"y\",\"lang\":\"de\"}}\n{\"name\": \"c\", \"text\": \"z\"}\n"
    );
    let now = cases_of(&jsonl).unwrap();
    assert_eq!((now[0].variables.clone(), now[1].variables.clone()), (a, b));
    assert_eq!(now[0].expected, before[0].expected, "the expected answer stays");
    assert_eq!(now[2], before[2]);

    let csv_text = "name,text,lang\r\na,\"two, words\",en\r\nb,y,fr\r\n";
    let csv = write(d, "cases.csv", csv_text.as_bytes());
    let rows = cases_of(&csv).unwrap();
    let mut vars = rows[1].variables.clone();
    vars.insert("text".into(), json!("say \"hi\""));
    write_rows(&csv, &[RowEdit { case: "b", was: Some(&rows[1]), variables: Some(&vars), expected: None }]).unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "name,text,lang\r\na,\"two, words\",en\r\nb,\"say \"\"hi\"\"\",fr\r\n"
    );

    // A CSV has a column per variable: a new one, or one taken from a single row, is refused.
    let mut new = vars.clone();
    new.insert("tone".into(), json!("dry"));
    let rows = cases_of(&csv).unwrap();
    let error = write_rows(&csv, &[RowEdit { case: "b", was: Some(&rows[1]), variables: Some(&new), expected: None }])
        .unwrap_err()
        .to_string();
    assert!(error.contains("cases.csv:3") && error.contains("no column `tone`"), "{error}");
    let mut fewer = vars.clone();
    fewer.remove("lang");
    let error =
        write_rows(&csv, &[RowEdit { case: "b", was: Some(&rows[1]), variables: Some(&fewer), expected: None }])
            .unwrap_err()
            .to_string();
    assert!(error.contains("`lang` cannot leave case \"b\""), "{error}");
}

#[test]
fn a_row_changed_on_disk_since_it_was_read_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"name\":\"a\",\"text\":\"x\"}\n{\"name\":\"b\",\"text\":\"y\"}\n";
    let jsonl = write(dir.path(), "cases.jsonl", text.as_bytes());
    let read = cases_of(&jsonl).unwrap();
    // Someone else edits row b (and only b) after the workbench read the file.
    let outside = "{\"name\":\"a\",\"text\":\"x\"}\n{\"name\":\"b\",\"text\":\"y, edited elsewhere\"}\n";
    std::fs::write(&jsonl, outside).unwrap();
    let mut a = read[0].variables.clone();
    a.insert("text".into(), json!("mine"));
    let mut b = read[1].variables.clone();
    b.insert("text".into(), json!("mine too"));
    let edits = [
        RowEdit { case: "a", was: Some(&read[0]), variables: Some(&a), expected: None },
        RowEdit { case: "b", was: Some(&read[1]), variables: Some(&b), expected: None },
    ];
    let error = write_rows(&jsonl, &edits).unwrap_err().to_string();
    assert!(error.contains("cases.jsonl:2") && error.contains("case \"b\" changed on disk"), "{error}");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), outside, "nothing written, the outside edit kept");
    // Row a alone was not touched outside: its edit goes in, b's outside edit stays.
    write_rows(&jsonl, &edits[..1]).unwrap();
    assert_eq!(
        std::fs::read_to_string(&jsonl).unwrap(),
        "{\"name\":\"a\",\"text\":\"mine\"}\n{\"name\":\"b\",\"text\":\"y, edited elsewhere\"}\n"
    );
}

#[test]
fn a_crlf_csv_names_its_rows_by_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "crlf.csv", b"text\r\nx\r\ny\r\n\r\nz\r\n");
    let names: Vec<String> = cases_of(&csv).unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["line-2", "line-3", "line-5"]);
    let error = error_of(dir.path(), "bad.csv", b"text,expected\r\nx,\r\n\r\ny,[oops\r\n");
    assert!(error.starts_with(&format!("{}:4: column `expected`", dir.path().join("bad.csv").display())), "{error}");
    let error = error_of(dir.path(), "header.csv", b"text,text\r\nx,y\r\n");
    assert!(error.contains("header.csv:1: two columns"), "{error}");
}

#[test]
fn a_save_lays_the_rows_after_the_inline_cases_and_refuses_a_row_deleted_in_the_workbench() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prompt_path =
        write(d, "p.toml", PROMPT.replace("[[cases]]", "cases_file = \"rows.jsonl\"\n\n[[cases]]").as_bytes());
    let rows = write(d, "rows.jsonl", b"{\"name\":\"r1\",\"text\":\"one\"}\n{\"name\":\"r2\",\"text\":\"two\"}\n");
    let mut read = PromptFile::from_toml_str(&std::fs::read_to_string(&prompt_path).unwrap(), &prompt_path).unwrap();
    read_into(&mut read, &prompt_path, d, None, &Variables::new()).unwrap();

    // Edited: a case added after the rows, r2's text changed.
    let mut cases = read.cases.clone();
    let mut added = cases[0].clone();
    added.name = "added".into();
    cases.push(added);
    cases[2].variables.insert("text".into(), json!("two, edited"));
    let mut edited = read.clone();
    place_rows(&mut edited, cases);
    let names: Vec<&str> = edited.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["alpha", "added", "r1", "r2"]);
    assert_eq!(edited.inline_cases().len(), 2);
    assert_eq!(edited.dataset.as_ref().unwrap().lines, [1, 2]);
    assert_eq!(save_edits(&read, &edited).unwrap(), 1);
    assert_eq!(
        std::fs::read_to_string(&rows).unwrap(),
        "{\"name\":\"r1\",\"text\":\"one\"}\n{\"name\":\"r2\",\"text\":\"two, edited\"}\n"
    );
    // Saved again (the prompt file's save failed after the rows went in): no conflict, nothing new.
    assert_eq!(save_edits(&read, &edited).unwrap(), 1);

    let mut deleted = read.clone();
    let cases: Vec<Case> = read.cases.iter().filter(|c| c.name != "r1").cloned().collect();
    place_rows(&mut deleted, cases);
    let error = save_edits(&read, &deleted).unwrap_err().to_string();
    assert!(error.contains("rows.jsonl") && error.contains("case \"r1\" is a row of this file"), "{error}");
}

#[test]
fn a_csv_dataset_is_indexed_and_each_row_read_again_alone_from_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prompt_path = d.join("p.toml");
    let text = format!("cases_file = \"cases.csv\"\n{PROMPT}");
    // A BOM, CRLF endings, a blank line, a quoted cell across two lines, an expected answer as JSON.
    let csv = "\u{feff}name,text,expected\r\nbeta,\"BETA, \"\"quoted\"\"\",\r\n\r\ngamma,\"two\r\nlines\",\"{\"\"items\"\": [{\"\"entity\"\": \"\"G\"\", \"\"definition\"\": \"\"g\"\"}]}\"\r\n,last row,\r\n";
    let path = write(d, "cases.csv", csv.as_bytes());
    let prompt = PromptFile::from_toml_str(&text, &prompt_path).unwrap();
    let index = index::index(&prompt, &prompt_path, d, None, &Variables::new()).unwrap().unwrap();
    assert_eq!((index.len(), index.held()), (3, 0), "a CSV dataset is indexed, its cases read from the file");
    let whole = cases_of(&path).unwrap();
    assert_eq!(whole.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["beta", "gamma", "line-6"]);
    for (i, case) in whole.iter().enumerate() {
        let alone = index.case(i).unwrap();
        assert_eq!(
            (alone.name.as_str(), &alone.variables, alone.expected.is_some()),
            (case.name.as_str(), &case.variables, case.expected.is_some()),
            "row {i} read alone is the row read in order"
        );
    }
    assert_eq!(index.case(1).unwrap().variables.get("text"), Some(&json!("two\r\nlines")));
    let mut names = Vec::new();
    index
        .each(|i, case| {
            names.push((i, case.name));
            Ok::<_, DatasetError>(())
        })
        .unwrap();
    assert_eq!(names, [(0, "beta".to_string()), (1, "gamma".to_string()), (2, "line-6".to_string())]);
    // The file changed under the eval: the row is not the one checked, and the error names its line.
    write(d, "cases.csv", csv.replace("gamma", "delta").as_bytes());
    let error = index.case(1).unwrap_err().to_string();
    assert!(error.contains("cases.csv:4") && error.contains("changed"), "{error}");
}

/// A wide CSV (20,000 columns × 50 rows) reads, is indexed and has each row read again alone: its
/// header is checked once per read, never once per column per column (that took 25 s for 50,000
/// columns × 6 rows).
#[test]
fn a_wide_csv_is_read_and_each_row_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let prompt_path = d.join("p.toml");
    let prompt = PromptFile::from_toml_str(&format!("cases_file = \"wide.csv\"\n{PROMPT}"), &prompt_path).unwrap();
    let (columns, rows) = (20_000, 50);
    let mut csv = String::from("name,text");
    for c in 2..columns {
        csv.push_str(&format!(",c{c}"));
    }
    csv.push('\n');
    for r in 0..rows {
        csv.push_str(&format!("row{r},TEXT-{r}"));
        for _ in 2..columns {
            csv.push_str(",x");
        }
        csv.push('\n');
    }
    let path = write(d, "wide.csv", csv.as_bytes());
    assert_eq!(cases_of(&path).unwrap().len(), rows);
    let index = index::index(&prompt, &prompt_path, d, None, &Variables::new()).unwrap().unwrap();
    assert_eq!(index.len(), rows);
    for r in 0..rows {
        let case = index.case(r).unwrap();
        assert_eq!(case.name, format!("row{r}"));
        assert_eq!(case.variables.len(), columns - 1);
        assert_eq!(case.variables.get("text"), Some(&json!(format!("TEXT-{r}"))));
    }
    // A header naming a column twice is still refused, at line 1.
    let twice = format!("name,text,c9,{}", &csv[csv.find(",c2,").unwrap() + 1..]);
    let error = error_of(d, "twice.csv", twice.as_bytes());
    assert!(error.contains("twice.csv:1: two columns are named `c9`"), "{error}");
}

/// A CSV field without end is refused as soon as its row passes the limit, at the row's line: the
/// reader never reads a row much past [`ROW_BYTES`] (it used to hold a 200 MB field whole first).
#[test]
fn an_endless_csv_field_is_refused_while_it_is_read() {
    struct Endless {
        head: &'static [u8],
        given: usize,
    }
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            assert!(self.given < 4 * ROW_BYTES, "read {} bytes of one row", self.given);
            let n = buf.len();
            for (i, byte) in buf.iter_mut().enumerate() {
                *byte = self.head.get(self.given + i).copied().unwrap_or(b'x');
            }
            self.given += n;
            Ok(n)
        }
    }
    let reader = Endless { head: b"name,text\nalpha,ALPHA\n\nbeta,\"", given: 0 };
    let mut rows = 0;
    let error = csv_rows::read_from(Path::new("endless.csv"), reader, &mut |_, _, _, _| {
        rows += 1;
        Ok(true)
    })
    .unwrap_err()
    .to_string();
    assert_eq!(rows, 1);
    assert!(error.starts_with("endless.csv:4: a row longer than 1048576 bytes"), "{error}");
    // A header without end, too.
    let reader = Endless { head: b"name,\"", given: 0 };
    let error = csv_rows::read_from(Path::new("endless.csv"), reader, &mut |_, _, _, _| Ok(true)).unwrap_err();
    assert!(error.to_string().starts_with("endless.csv:1: a row longer than"), "{error}");
}

/// An approve (an expected answer written with the row as read) is refused when the row changed on
/// disk since, its variables or its expected answer; the same answer written again is no conflict.
#[test]
fn an_approve_into_a_row_changed_outside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = "{\"name\":\"a\",\"text\":\"x\",\"expected\":[1]}\n";
    let jsonl = write(dir.path(), "cases.jsonl", text.as_bytes());
    let read = cases_of(&jsonl).unwrap();
    let answer = json!([2]);
    let approve = RowEdit { case: "a", was: Some(&read[0]), variables: None, expected: Some(&answer) };
    for outside in
        ["{\"name\":\"a\",\"text\":\"y\",\"expected\":[1]}\n", "{\"name\":\"a\",\"text\":\"x\",\"expected\":[3]}\n"]
    {
        std::fs::write(&jsonl, outside).unwrap();
        let error = write_rows(&jsonl, &[approve]).unwrap_err().to_string();
        assert!(error.contains("cases.jsonl:1") && error.contains("changed on disk (outside tunebench)"), "{error}");
        assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), outside, "nothing written");
    }
    std::fs::write(&jsonl, text).unwrap();
    write_rows(&jsonl, &[approve]).unwrap();
    write_rows(&jsonl, &[approve]).unwrap();
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "{\"name\":\"a\",\"text\":\"x\",\"expected\":[2]}\n");
}
