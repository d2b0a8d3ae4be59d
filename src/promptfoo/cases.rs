//! A config's `tests` and `defaultTest` (promptfoo.dev/docs/configuration/test-cases): inline test
//! objects, `file://` CSV/JSONL/YAML files (read row by row through `dataset::read_rows`; a CSV's
//! `__expected`, `__expected1`… hold one assertion each, `__description` names the test), and globs
//! (`file://tests/*.csv`, a `*` or `?` in the file's name). A variable given as a list runs the test
//! once per value (every combination, as promptfoo does). `defaultTest`'s variables lie under each
//! test's, its assertions come before each test's.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::asserts::{self, parse_expected, Assert};
use super::node::{Node, Tree};
use super::{mapping, one_or_many, text_of, ModelRef, Place, PromptfooError, Test};
use crate::dataset::{self, Cells};
use crate::prompt::file::named;

const TEST_KEYS: [&str; 7] = ["description", "vars", "assert", "threshold", "options", "metadata", "providers"];
const DEFAULT_KEYS: [&str; 6] = ["vars", "assert", "threshold", "options", "metadata", "providers"];
/// The most tests the combinations of list variables may make of one test.
const MOST_COMBINATIONS: usize = 10_000;
/// The most tests a config may make in all (list variables expanded), counted before any is made.
const MOST_TESTS: usize = 200_000;
/// The most bytes of variables the tests may hold in all (a `defaultTest` variable counts once per
/// test it reaches), counted before they are copied.
const MOST_VARIABLE_BYTES: usize = 512 << 20;

/// A test as written, before `defaultTest` and list variables apply.
struct Written {
    description: Option<String>,
    vars: Map<String, Value>,
    asserts: Vec<Assert>,
    threshold: Option<f64>,
    /// `options.provider`: the grader of its `llm-rubric` assertions that name none.
    grader: Option<ModelRef>,
    /// `options.provider.embedding` (or an embedding id as `options.provider`): the embedder of its
    /// `similar` assertions that name none.
    embedder: Option<ModelRef>,
    /// `providers`: the providers (labels or ids) the test runs on.
    providers: Option<Vec<String>>,
    /// `options.transform`: JavaScript run on the answer before every assertion.
    transform: Option<String>,
    at: String,
}

pub(super) fn read(
    place: &Place,
    base_dir: &Path,
    tests: Option<&Node>,
    default: Option<&Node>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Test>, PromptfooError> {
    let default = match default {
        Some(node) => Some(object(place, base_dir, node, &DEFAULT_KEYS, warnings)?),
        None => None,
    };
    let mut written = Vec::new();
    match tests {
        None => written.push(Written {
            description: None,
            vars: Map::new(),
            asserts: Vec::new(),
            threshold: None,
            grader: None,
            embedder: None,
            providers: None,
            transform: None,
            at: place.path.display().to_string(),
        }),
        Some(node) => {
            for item in one_or_many(node) {
                match item.as_text() {
                    Some(name) => {
                        for path in files(place, base_dir, item.line, name)? {
                            from_file(&path, base_dir, &mut written, warnings)?;
                        }
                    }
                    None => written.push(object(place, base_dir, item, &TEST_KEYS, warnings)?),
                }
            }
        }
    }
    // Counted before anything is expanded or copied: how many tests, and how many bytes of variables.
    let default_bytes = default.as_ref().map_or(0, |d| bytes_of(&d.vars));
    let (mut total_tests, mut total_bytes) = (0usize, 0usize);
    for test in &written {
        let count = test.vars.values().fold(1usize, |n, v| match v {
            Value::Array(values) if !values.is_empty() => n.saturating_mul(values.len()),
            _ => n,
        });
        total_tests = total_tests.saturating_add(count);
        total_bytes = total_bytes.saturating_add(count.saturating_mul(default_bytes + bytes_of(&test.vars)));
        if total_tests > MOST_TESTS {
            return Err(PromptfooError {
                at: test.at.clone(),
                message: format!(
                    "the tests expand to more than {MOST_TESTS} tests (list variables make one per value): split the config"
                ),
            });
        }
        if total_bytes > MOST_VARIABLE_BYTES {
            return Err(PromptfooError {
                at: test.at.clone(),
                message: format!(
                    "the tests' variables come to more than {} MiB once each test has its own (defaultTest's count once per test): keep large texts in fewer tests",
                    MOST_VARIABLE_BYTES >> 20
                ),
            });
        }
    }
    let mut tests = Vec::new();
    for (index, test) in written.into_iter().enumerate() {
        let mut vars = default.as_ref().map(|d| d.vars.clone()).unwrap_or_default();
        vars.extend(test.vars);
        let mut asserts = default.as_ref().map(|d| d.asserts.clone()).unwrap_or_default();
        asserts.extend(test.asserts);
        // The test's `options.provider`, else defaultTest's, grades the llm-rubric assertions naming none.
        if let Some(grader) = test.grader.as_ref().or(default.as_ref().and_then(|d| d.grader.as_ref())) {
            for assert in
                asserts.iter_mut().filter(|a| a.grader.is_none() && a.kind.to_string().ends_with("llm-rubric"))
            {
                assert.grader = Some(grader.clone());
            }
        }
        if let Some(embedder) = test.embedder.as_ref().or(default.as_ref().and_then(|d| d.embedder.as_ref())) {
            for assert in asserts.iter_mut().filter(|a| a.embedder.is_none() && a.kind.to_string().ends_with("similar"))
            {
                assert.embedder = Some(embedder.clone());
            }
        }
        let threshold = test.threshold.or(default.as_ref().and_then(|d| d.threshold));
        // The test's `options.transform` replaces defaultTest's (promptfoo does not chain them) and
        // runs before each assertion's own.
        if let Some(transform) = test.transform.as_ref().or(default.as_ref().and_then(|d| d.transform.as_ref())) {
            for assert in &mut asserts {
                assert.transforms.insert(0, transform.clone());
            }
        }
        // A test without list variables is one test: its variables and assertions are taken, not copied.
        let listed = vars.values().any(|v| matches!(v, Value::Array(values) if !values.is_empty()));
        let combinations = match listed {
            true => combinations(&vars).map_err(|message| PromptfooError { at: test.at.clone(), message })?,
            false => vec![vars],
        };
        let many = combinations.len() > 1;
        for vars in combinations {
            let name = match (&test.description, many) {
                (Some(description), false) => description.clone(),
                (Some(description), true) => format!("{description} {}", shown(&vars)),
                (None, _) => format!("test {} {}", index + 1, shown(&vars)).trim_end().to_string(),
            };
            let asserts = rendered(if many { asserts.clone() } else { std::mem::take(&mut asserts) }, &vars);
            let providers = test.providers.clone().or_else(|| default.as_ref().and_then(|d| d.providers.clone()));
            tests.push(Test { name, vars, asserts, threshold, providers, at: test.at.clone() });
        }
    }
    distinct_names(&mut tests);
    Ok(tests)
}

/// `asserts` with each text value rendered with the test's variables, as promptfoo renders them
/// (`value: "{{expected}}"`); a value that does not render stays as written.
fn rendered(asserts: Vec<Assert>, vars: &Map<String, Value>) -> Vec<Assert> {
    let render = |text: &str| -> Option<String> {
        if !text.contains("{{") && !text.contains("{%") {
            return None;
        }
        let template =
            crate::prompt::template::Template::compile(crate::prompt::template::Part::Template, text).ok()?;
        template.render(vars).ok()
    };
    asserts
        .into_iter()
        .map(|assert| {
            let value = match &assert.value {
                Some(Value::String(text)) => render(text).map(Value::String),
                Some(Value::Array(items)) if items.iter().any(|i| i.as_str().is_some_and(|t| t.contains("{{"))) => {
                    Some(Value::Array(
                        items
                            .iter()
                            .map(|item| match item.as_str().and_then(render) {
                                Some(text) => Value::String(text),
                                None => item.clone(),
                            })
                            .collect(),
                    ))
                }
                _ => None,
            };
            match value {
                Some(value) => Assert { value: Some(value), ..assert },
                None => assert,
            }
        })
        .collect()
}

/// About how many bytes `vars` hold (their texts and keys; numbers and the like count 8).
fn bytes_of(vars: &Map<String, Value>) -> usize {
    fn size(value: &Value) -> usize {
        match value {
            Value::String(text) => text.len(),
            Value::Array(items) => items.iter().map(size).sum(),
            Value::Object(map) => map.iter().map(|(k, v)| k.len() + size(v)).sum(),
            _ => 8,
        }
    }
    vars.iter().map(|(k, v)| k.len() + size(v)).sum()
}

/// A test object (or `defaultTest`), its keys checked against `known`.
fn object(
    place: &Place,
    base_dir: &Path,
    node: &Node,
    known: &[&str],
    warnings: &mut Vec<String>,
) -> Result<Written, PromptfooError> {
    let entries = mapping(place, node, "a test", known)?;
    let description =
        entries.get("description").map(|n| text_of(place, n, "description")).transpose()?.map(str::to_string);
    let vars = match entries.get("vars") {
        None => Map::new(),
        Some(vars) => variables(place, base_dir, vars)?,
    };
    let asserts = match entries.get("assert") {
        None => Vec::new(),
        Some(list) => asserts::read(place, list, warnings)?,
    };
    let threshold = match entries.get("threshold") {
        None => None,
        Some(n) => Some(n.as_f64().filter(|t| t.is_finite() && *t >= 0.0).ok_or_else(|| {
            place.error(n.line, format!("a test's `threshold` is a number, 0 or more, not {}", n.to_json()))
        })?),
    };
    let (mut grader, mut embedder, mut transform) = (None, None, None);
    if let Some(options) = entries.get("options") {
        let keys = options.entries().unwrap_or_default();
        if let Some(provider) = keys.get("provider") {
            // `{embedding: ..., text: ...}` names a model per purpose; an id alone grades (and embeds
            // when it is an embedding model's: `openai:embedding:…`).
            let purposes = provider.entries().filter(|e| e.contains_key("embedding") || e.contains_key("text"));
            match purposes {
                Some(by_purpose) => {
                    if by_purpose.contains_key("embedding") {
                        embedder = Some(super::asserts::embedder_of(place, provider)?);
                    }
                    if let Some(text) = by_purpose.get("text") {
                        grader = Some(super::asserts::grader_of(place, text)?);
                    }
                }
                None => {
                    let id = provider.as_text().unwrap_or_default();
                    if id.contains(":embedding:") || id.contains(":embeddings:") {
                        embedder = Some(super::asserts::embedder_of(place, provider)?);
                    } else {
                        grader = Some(super::asserts::grader_of(place, provider)?);
                    }
                }
            }
        }
        if let Some(code) = keys.get("transform") {
            transform = Some(text_of(place, code, "options.transform")?.to_string());
        }
        if let Some((key, value)) = keys.iter().find(|(key, _)| **key != "provider" && **key != "transform") {
            return Err(place.error(
                value.line,
                format!("a test's `options.{key}` is not supported by tunebench (it changes the prompt or the answer before judging)"),
            ));
        }
    }
    if let Some(metadata) = entries.get("metadata") {
        warnings.push(format!("{}: a test's `metadata` is read past", place.at(metadata.line)));
    }
    let providers = match entries.get("providers") {
        None => None,
        Some(list) => Some(
            one_or_many(list)
                .into_iter()
                .map(|p| text_of(place, p, "providers").map(str::to_string))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(Written {
        description,
        vars,
        asserts,
        threshold,
        grader,
        embedder,
        providers,
        transform,
        at: place.at(node.line),
    })
}

/// A test's `vars`: each value as written, a `file://` value read from the file (JSON parsed, other
/// files as text).
fn variables(place: &Place, base_dir: &Path, node: &Node) -> Result<Map<String, Value>, PromptfooError> {
    let Tree::Map(entries) = &node.tree else {
        return Err(place.error(node.line, format!("`vars` is a mapping of variables, not {}", node.kind())));
    };
    let mut vars = Map::new();
    for (name, value) in entries {
        let value = match value.as_text().and_then(|t| t.strip_prefix("file://")) {
            Some(file) => var_file(place, base_dir, value.line, file)?,
            None => value.to_json(),
        };
        vars.insert(name.clone(), value);
    }
    Ok(vars)
}

fn var_file(place: &Place, base_dir: &Path, line: usize, file: &str) -> Result<Value, PromptfooError> {
    let name = Path::new(file);
    let extension = name.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if matches!(extension.as_str(), "js" | "cjs" | "mjs" | "ts" | "py") {
        return Err(place
            .error(line, format!("the variable file {file:?} is code; tunebench reads text and JSON variable files")));
    }
    let (_, text) = named::read(base_dir, "vars", name, None, crate::files::INPUT_TEXT)
        .map_err(|e| place.error(line, e.to_string()))?;
    if extension == "json" {
        return serde_json::from_str(&text).map_err(|e| place.error(line, format!("{file:?} is not JSON: {e}")));
    }
    Ok(Value::String(text))
}

/// The files a `tests` entry names (`file://x.csv`, or a glob in the file's name), inside the config's
/// folder.
fn files(place: &Place, base_dir: &Path, line: usize, text: &str) -> Result<Vec<PathBuf>, PromptfooError> {
    let Some(name) = text.strip_prefix("file://") else {
        return Err(place.error(line, format!("a test given as text names a file (file://tests.csv), not {text:?}")));
    };
    let name = Path::new(name);
    let file_name = name.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let refuse = |e: crate::prompt::file::PromptError| place.error(line, e.to_string());
    if !file_name.contains(['*', '?']) {
        let path = named::resolve(base_dir, "tests", name, None).map_err(refuse)?;
        match std::fs::metadata(&path) {
            Ok(found) if found.is_file() => {}
            Ok(_) => {
                return Err(place.error(
                    line,
                    format!("{text:?} is not a regular file (a FIFO, a device or a folder): {}", path.display()),
                ))
            }
            Err(_) => return Err(place.error(line, format!("{text:?}: no such file ({})", path.display()))),
        }
        return Ok(vec![path]);
    }
    let folder = name.parent().unwrap_or(Path::new(""));
    if folder.to_string_lossy().contains(['*', '?']) {
        return Err(place.error(line, format!("{text:?}: a glob here has its `*` and `?` in the file's name alone")));
    }
    let folder =
        named::resolve(base_dir, "tests", if folder.as_os_str().is_empty() { Path::new(".") } else { folder }, None)
            .map_err(refuse)?;
    let listing =
        std::fs::read_dir(&folder).map_err(|e| place.error(line, format!("cannot list {}: {e}", folder.display())))?;
    let mut found: Vec<PathBuf> = listing
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_str().is_some_and(|n| glob_match(file_name, n)))
        .map(|entry| entry.path())
        .collect();
    found.sort();
    // Each match obeys the rule a plain path does: a link out of the config's folder is refused.
    let base = std::fs::canonicalize(if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir })
        .map_err(|e| place.error(line, format!("cannot read the config's folder: {e}")))?;
    for path in &found {
        let real = std::fs::canonicalize(path).map_err(|e| place.error(line, format!("{}: {e}", path.display())))?;
        let relative = real.strip_prefix(&base).map_err(|_| {
            place.error(
                line,
                format!(
                    "{text:?} matches {}, a link to {}, outside the config's folder; the files a config names stay inside it",
                    path.display(),
                    real.display()
                ),
            )
        })?;
        named::resolve(base_dir, "tests", relative, None).map_err(refuse)?;
    }
    if found.is_empty() {
        return Err(place.error(line, format!("{text:?} matches no file")));
    }
    Ok(found)
}

/// Whether `name` matches `pattern` (`*` any run of characters, `?` one).
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The tests of a tests file: CSV rows (variables and `__` columns), JSONL/YAML rows (test objects).
fn from_file(
    path: &Path,
    base_dir: &Path,
    written: &mut Vec<Written>,
    warnings: &mut Vec<String>,
) -> Result<(), PromptfooError> {
    let bad = |e: dataset::DatasetError| PromptfooError { at: e.at, message: e.message };
    dataset::read_rows(path, |row, how, at| {
        let place = Place { path };
        let fail = |e: PromptfooError| dataset::DatasetError { at: e.at, message: e.message };
        let test = match how {
            Cells::Text => csv_row(row, at.line, path).map_err(|message| at.error(message))?,
            Cells::Json => {
                let node = node_of(&Value::Object(row), at.line);
                object(&place, base_dir, &node, &TEST_KEYS, warnings).map_err(fail)?
            }
        };
        written.push(test);
        Ok(())
    })
    .map_err(bad)
}

/// A CSV row: `__expected*` columns are assertions, `__description` the name, the rest variables.
fn csv_row(row: Map<String, Value>, line: usize, path: &Path) -> Result<Written, String> {
    let mut vars = Map::new();
    let mut asserts = Vec::new();
    let mut description = None;
    let mut threshold = None;
    let at = format!("{}:{line}", path.display());
    for (column, value) in row {
        let text = value.as_str().unwrap_or_default().to_string();
        if column == "__description" {
            description = Some(text).filter(|t| !t.trim().is_empty());
        } else if column == "__expected" || column.strip_prefix("__expected").is_some_and(|n| n.parse::<u32>().is_ok())
        {
            if !text.trim().is_empty() {
                asserts.push(parse_expected(&text, at.clone()).map_err(|why| format!("column `{column}`: {why}"))?);
            }
        } else if column == "__threshold" {
            if !text.trim().is_empty() {
                let t = text.trim().parse::<f64>().ok().filter(|t| t.is_finite() && *t >= 0.0);
                threshold = Some(t.ok_or_else(|| format!("column `__threshold`: a number, 0 or more, not {text:?}"))?);
            }
        } else if column.starts_with("__metadata") {
            // promptfoo's metadata (for filtering its web view): it judges nothing.
        } else if column.starts_with("__") {
            return Err(format!(
                "column `{column}`: of promptfoo's `__` columns, __expected, __expectedN, __description, __threshold and __metadata are read"
            ));
        } else {
            vars.insert(column, Value::String(text));
        }
    }
    Ok(Written {
        description,
        vars,
        asserts,
        threshold,
        grader: None,
        embedder: None,
        providers: None,
        transform: None,
        at,
    })
}

/// A JSON value as a node, every part placed at `line` (a row of a JSONL or YAML tests file).
fn node_of(value: &Value, line: usize) -> Node {
    let tree = match value {
        Value::Null => Tree::Null,
        Value::Bool(b) => Tree::Bool(*b),
        Value::Number(n) => Tree::Number(n.clone()),
        Value::String(s) => Tree::Text(s.clone()),
        Value::Array(items) => Tree::List(items.iter().map(|v| node_of(v, line)).collect()),
        Value::Object(map) => Tree::Map(map.iter().map(|(k, v)| (k.clone(), node_of(v, line))).collect()),
    };
    Node { line, tree }
}

/// Every combination of the values of list variables (a test with none is itself).
fn combinations(vars: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, String> {
    let mut all = vec![Map::new()];
    for (name, value) in vars {
        let values: Vec<&Value> = match value {
            Value::Array(values) if !values.is_empty() => values.iter().collect(),
            other => vec![other],
        };
        if all.len().saturating_mul(values.len()) > MOST_COMBINATIONS {
            return Err(format!("the list variables make more than {MOST_COMBINATIONS} tests of one test"));
        }
        all = all
            .into_iter()
            .flat_map(|done| {
                values.iter().map(move |v| {
                    let mut next = done.clone();
                    next.insert(name.clone(), (*v).clone());
                    next
                })
            })
            .collect();
    }
    Ok(all)
}

/// `(a=1, b=x)`: the variables in a test's name, cut short.
fn shown(vars: &Map<String, Value>) -> String {
    if vars.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = vars
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let v: String = v.chars().take(30).collect();
            format!("{k}={v}")
        })
        .collect();
    let joined = parts.join(", ");
    let joined: String = joined.chars().take(80).collect();
    format!("({joined})")
}

/// Test names made distinct: a second of one name gets ` #2`, and so on.
fn distinct_names(tests: &mut [Test]) {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for test in tests.iter_mut() {
        let count = seen.entry(test.name.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            test.name = format!("{} #{count}", test.name);
        }
    }
}
