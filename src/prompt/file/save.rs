//! Writing a prompt file: TOML text in a fixed key order (a new file), and the atomic
//! temp-file-then-rename write that refuses to overwrite a file changed since it was read.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Serialize;
use serde_json::Value;

use super::{Case, PromptError, PromptFile, ProviderSettings};
use crate::output::{Profile, ResponseType};
use crate::prompt::expect::{CheckSpec, EvalSettings};
use crate::prompt::template::Variables;

/// The file's keys in the order they are written: scalars, the texts, then the tables.
#[derive(Serialize)]
struct Out<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    response_type: ResponseType,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cases_file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    template: &'a str,
    /// Inline schemas are written as pretty JSON text: how JSON Schema reads best, and it keeps nulls.
    #[serde(skip_serializing_if = "Option::is_none")]
    schema: Option<String>,
    #[serde(skip_serializing_if = "Variables::is_empty")]
    variables: &'a Variables,
    #[serde(skip_serializing_if = "Variables::is_empty")]
    terms: &'a Variables,
    #[serde(skip_serializing_if = "ProviderSettings::is_empty")]
    provider: &'a ProviderSettings,
    #[serde(skip_serializing_if = "EvalSettings::is_empty")]
    eval: &'a EvalSettings,
    #[serde(skip_serializing_if = "<[CheckSpec]>::is_empty")]
    checks: &'a [CheckSpec],
    /// The inline cases, their expected answers' nulls spelled `{ null = true }`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cases: Vec<Case>,
}

/// The prompt as TOML text.
pub(super) fn to_toml(prompt: &PromptFile) -> Result<String, PromptError> {
    let out = out(prompt)?;
    toml::to_string_pretty(&out).map_err(|e| PromptError::NotToml { id: prompt.id.clone(), message: e.to_string() })
}

/// The prompt's keys as the file writes them, as JSON (the inline schema as its JSON value): what
/// an in-place save compares key by key.
pub(super) fn fields(prompt: &PromptFile) -> Result<serde_json::Map<String, Value>, PromptError> {
    let not_toml = |message: String| PromptError::NotToml { id: prompt.id.clone(), message };
    let out = out(prompt)?;
    let Value::Object(mut map) = serde_json::to_value(&out).map_err(|e| not_toml(e.to_string()))? else {
        return Err(not_toml("not a table".into()));
    };
    if let Some(schema) = &prompt.schema {
        map.insert("schema".into(), schema.clone());
    }
    Ok(map)
}

/// The prompt as the file writes it, checked for what TOML cannot hold.
fn out(prompt: &PromptFile) -> Result<Out<'_>, PromptError> {
    let not_toml = |message: String| PromptError::NotToml { id: prompt.id.clone(), message };
    let set = [prompt.schema.is_some(), prompt.schema_file.is_some(), prompt.signature.is_some()];
    if set.iter().filter(|&&b| b).count() > 1 {
        return Err(PromptError::Conflict { id: prompt.id.clone() });
    }
    check_no_null("variables", &prompt.variables).map_err(not_toml)?;
    check_no_null("terms", &prompt.terms).map_err(not_toml)?;
    for case in prompt.inline_cases() {
        check_no_null(&format!("case {:?}", case.name), &case.variables).map_err(not_toml)?;
        if let Some(expected) = &case.expected {
            // A field's null is written `{ null = true }`; an item or value that is null itself cannot be.
            let values = expected.items.iter().flatten().chain(&expected.value);
            for (index, value) in values.enumerate() {
                if value.is_null() {
                    return Err(not_toml(format!(
                        "case {:?}: expected item {} is null, which TOML cannot hold",
                        case.name,
                        index + 1
                    )));
                }
            }
        }
        checks_without_null(&format!("case {:?}", case.name), &case.checks).map_err(not_toml)?;
    }
    checks_without_null("prompt", &prompt.checks).map_err(not_toml)?;
    let schema_file = match &prompt.schema_file {
        Some(path) => {
            Some(path.to_str().ok_or_else(|| not_toml(format!("schema_file {} is not UTF-8", path.display())))?)
        }
        None => None,
    };
    let cases_file = match &prompt.cases_file {
        Some(path) => {
            Some(path.to_str().ok_or_else(|| not_toml(format!("cases_file {} is not UTF-8", path.display())))?)
        }
        None => None,
    };
    let schema = prompt.schema.as_ref().map(|schema| pretty_json(schema, 0));
    Ok(Out {
        id: &prompt.id,
        description: prompt.description.as_deref(),
        response_type: prompt.response_type,
        profile: prompt.profile,
        max_turns: prompt.max_turns,
        signature: prompt.signature.as_deref(),
        schema_file,
        cases_file,
        system: prompt.system.as_deref(),
        template: &prompt.template,
        schema,
        variables: &prompt.variables,
        terms: &prompt.terms,
        provider: &prompt.provider,
        eval: &prompt.eval,
        checks: &prompt.checks,
        cases: prompt.inline_cases().iter().map(spelled_nulls).collect(),
    })
}

/// `case` as the file writes it: its expected answer's nulls spelled `{ null = true }`.
fn spelled_nulls(case: &Case) -> Case {
    let mut case = case.clone();
    if let Some(expected) = &mut case.expected {
        let spell = crate::prompt::expect::null::spelled;
        expected.items = expected.items.as_ref().map(|items| items.iter().map(spell).collect());
        expected.value = expected.value.as_ref().map(spell);
    }
    case
}

/// Widest line [`pretty_json`] keeps a value on.
const LINE_WIDTH: usize = 88;

/// JSON as a person would indent it: a value that fits on its line stays on one line
/// (`{"type": "string"}`), a bigger one opens up with two-space indents. Depth is bounded by the
/// parser's nesting limit, so the recursion is too.
pub(crate) fn pretty_json(value: &Value, indent: usize) -> String {
    let compact = compact_json(value);
    let container =
        matches!(value, Value::Array(a) if !a.is_empty()) || matches!(value, Value::Object(o) if !o.is_empty());
    if !container || indent + compact.len() <= LINE_WIDTH {
        return compact;
    }
    let pad = " ".repeat(indent + 2);
    let (open, close, items): (char, char, Vec<String>) = match value {
        Value::Array(items) => {
            ('[', ']', items.iter().map(|v| format!("{pad}{}", pretty_json(v, indent + 2))).collect())
        }
        Value::Object(map) => (
            '{',
            '}',
            map.iter()
                .map(|(k, v)| {
                    format!("{pad}{}: {}", compact_json(&Value::String(k.clone())), pretty_json(v, indent + 2))
                })
                .collect(),
        ),
        _ => return compact,
    };
    format!("{open}\n{}\n{}{close}", items.join(",\n"), " ".repeat(indent))
}

/// One-line JSON with `", "` and `": "` separators.
fn compact_json(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("[{}]", items.iter().map(compact_json).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", compact_json(&Value::String(k.clone())), compact_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        scalar => scalar.to_string(),
    }
}

/// TOML has no null: name the first check value holding one.
fn checks_without_null(whose: &str, checks: &[CheckSpec]) -> Result<(), String> {
    for (index, check) in checks.iter().enumerate() {
        for value in check.value.iter().chain(check.values.iter().flatten()) {
            check_no_null_in(&format!("{whose}: check {} ({})", index + 1, check.label()), value)?;
        }
    }
    Ok(())
}

/// TOML has no null: name the first place in `value` holding one.
fn check_no_null_in(what: &str, value: &Value) -> Result<(), String> {
    match value {
        Value::Null => Err(format!("{what} is null, which TOML cannot hold")),
        Value::Object(map) => check_no_null(what, map),
        Value::Array(_) => {
            let wrapped: Variables = [("value".to_string(), value.clone())].into_iter().collect();
            check_no_null(what, &wrapped)
        }
        _ => Ok(()),
    }
}

/// TOML has no null: name the first variable holding one (at any depth).
fn check_no_null(table: &str, vars: &Variables) -> Result<(), String> {
    let mut stack: Vec<(String, &Value)> = vars.iter().map(|(k, v)| (k.clone(), v)).collect();
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::Null => return Err(format!("{table}: `{path}` is null, which TOML cannot hold")),
            Value::Array(items) => stack.extend(items.iter().enumerate().map(|(i, v)| (format!("{path}[{i}]"), v))),
            Value::Object(map) => stack.extend(map.iter().map(|(k, v)| (format!("{path}.{k}"), v))),
            _ => {}
        }
    }
    Ok(())
}

static NEXT_TEMP: AtomicUsize = AtomicUsize::new(0);

/// Removes `.<name>.<pid>.<n>.tmp` files in `dir` left by another process and untouched for a minute
/// (a save takes milliseconds: such a file is what a killed save left).
fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefix = format!(".{name}.");
    let own = format!(".{name}.{}.", std::process::id());
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let ours = file.starts_with(&prefix) && file.ends_with(".tmp") && !file.starts_with(&own);
        let pid_and_n = file.get(prefix.len()..file.len().saturating_sub(4)).unwrap_or_default();
        let shaped = pid_and_n.split('.').count() == 2 && pid_and_n.split('.').all(|p| p.parse::<u64>().is_ok());
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(60));
        if ours && shaped && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes `text` over `path` when the file still holds `expected` (what was read before the edit);
/// otherwise [`PromptError::ChangedOutside`] and nothing is written. A missing file counts as changed
/// unless `expected` is empty.
pub fn write_over(path: &Path, expected: &str, text: &str) -> Result<(), PromptError> {
    let now = match crate::files::read(path, crate::files::PROMPT_FILE) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(PromptError::Read { path: path.to_path_buf(), message: e.problem.to_string() }),
    };
    let unchanged = match &now {
        Some(bytes) => bytes.as_slice() == expected.as_bytes(),
        None => expected.is_empty(),
    };
    if !unchanged {
        return Err(PromptError::ChangedOutside { path: path.to_path_buf() });
    }
    write_atomic(path, text)
}

/// Writes `text` to `path` through a temporary file in the same directory and a rename; a symlink is
/// written through (its target replaced, the link kept). A write that fails removes its temporary
/// file; temporary files of `path` that a killed process left behind (another process's, untouched
/// for a minute) are removed on the next save.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), PromptError> {
    write_atomic_with(path, |out| out.write_all(text.as_bytes()))
}

/// [`write_atomic`] of what `write` writes (buffered): a large text streamed to the file, never held
/// whole in memory.
pub fn write_atomic_with(
    path: &Path,
    mut write: impl FnMut(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), PromptError> {
    let link_target = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.file_type().is_symlink())
        .map(|_| std::fs::canonicalize(path))
        .transpose()
        .map_err(|e| PromptError::Write { path: path.to_path_buf(), message: format!("a symlink to nowhere: {e}") })?;
    let path = link_target.as_deref().unwrap_or(path);
    let fail = |message: String| PromptError::Write { path: path.to_path_buf(), message };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| fail("not a file name".into()))?.to_string_lossy().into_owned();
    remove_stale_temps(dir, &name);
    let permissions = std::fs::metadata(path).ok().map(|m| m.permissions());
    for _ in 0..1000 {
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let mut file = match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(fail(format!("cannot create a temporary file in {}: {e}", dir.display()))),
        };
        let mut buffered = std::io::BufWriter::new(&mut file);
        let streamed = write(&mut buffered).and_then(|()| buffered.flush());
        drop(buffered);
        let written = streamed
            .and_then(|()| file.sync_all())
            .and_then(|()| match &permissions {
                Some(p) => std::fs::set_permissions(&temp, p.clone()),
                None => Ok(()),
            })
            .and_then(|()| {
                drop(file);
                std::fs::rename(&temp, path)
            });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(fail(e.to_string()));
        }
        // Make the rename itself durable where the platform allows syncing a directory.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        return Ok(());
    }
    Err(fail(format!("no free temporary file name in {}", dir.display())))
}
