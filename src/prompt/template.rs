//! Template rendering: minijinja in strict mode, PtcRunner's Mustache forms on top, JSON variables.
//!
//! A template is Jinja (what TrustGraph's ibis templates and minijinja share: `{{ var }}`,
//! `{% for %}`, `{% if %}`, filters) plus the Mustache forms PtcRunner prompts use
//! (`{{#items}}…{{/items}}`, `{{^items}}…{{/items}}`, `{{.}}`, `{{! comment }}`), translated to Jinja
//! before compiling; [`mustache`] documents the rules. Variables are JSON values. Rendering:
//!
//! - an undefined variable is an error naming it and its line, never empty output;
//! - nothing is escaped (prompts are not HTML);
//! - strings render as they are, `null`/`true`/`false` as in JSON, lists and maps as compact JSON
//!   (`{"a": 1, "b": [2, 3]}`), numbers as minijinja prints them;
//! - the text is kept exactly, including a trailing newline.

mod mustache;

use std::collections::BTreeSet;
use std::fmt;

use minijinja::value::ValueKind;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, State, UndefinedBehavior, Value};

pub use mustache::RESERVED;

/// Variables of a prompt: JSON values by name, in the order written.
pub type Variables = serde_json::Map<String, serde_json::Value>;

/// Deepest nesting of a variable's value accepted (deeper is an error, never a stack overflow).
pub const MAX_VALUE_DEPTH: usize = 128;

/// The steps (minijinja's fuel: about one per instruction) any template may take to render: a
/// prompt's, and the chat template a GGUF file brings. A loop over 100,000 items takes well under
/// it; three nested `range(100000)` loops stop at it with an error instead of running for ever.
pub const RENDER_FUEL: u64 = 10_000_000;

/// What a prompt renders to: the system message (if the prompt has one) and the user message.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RenderedPrompt {
    pub system: Option<String>,
    pub user: String,
}

/// Which text of a prompt a template is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The system message.
    System,
    /// The user message template.
    Template,
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Part::System => "system",
            Part::Template => "template",
        })
    }
}

/// Why a template did not compile or render. Lines are 1-based lines of the template text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template text is malformed (Jinja syntax, or an unbalanced Mustache section).
    #[error("{part} line {line}, column {column}: {message}")]
    Syntax { part: Part, line: usize, column: usize, message: String },
    /// A variable the template uses has no value.
    #[error("{part} line {line}: undefined variable `{name}` (give it a value in [variables], the case, or --var)")]
    Undefined { part: Part, name: String, line: usize },
    /// Rendering failed otherwise (a bad filter argument, a map where `{{.}}` needs a scalar, …).
    #[error("{part}{}: {message}", .line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Render { part: Part, line: Option<usize>, message: String },
    /// A variable's value cannot be used (nested too deeply).
    #[error("variable `{name}`: {message}")]
    Variable { name: String, message: String },
}

/// A template compiled once, rendered with any variables.
pub struct Template {
    env: Environment<'static>,
    part: Part,
    top_level_names: Vec<String>,
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Template").field("part", &self.part).finish_non_exhaustive()
    }
}

const NAME: &str = "prompt";

impl Template {
    /// Translates the Mustache forms and compiles `source`; syntax errors carry line and column.
    pub fn compile(part: Part, source: &str) -> Result<Self, TemplateError> {
        let translation = mustache::translate(part, source)?;
        let mut env = environment();
        if let Err(e) = env.add_template_owned(NAME, translation.jinja.clone()) {
            let line = e.line().unwrap_or(1);
            let column = e
                .range()
                .and_then(|r| {
                    translation
                        .jinja
                        .get(..r.start)
                        .map(|before| before.len() - before.rfind('\n').map_or(0, |i| i + 1))
                })
                .map_or(1, |c| c + 1);
            let message = e.detail().map_or_else(|| e.kind().to_string(), |d| format!("{}: {d}", e.kind()));
            return Err(TemplateError::Syntax { part, line, column, message });
        }
        Ok(Self { env, part, top_level_names: translation.top_level_names })
    }

    /// Renders with `vars`; an undefined variable is an error naming it.
    pub fn render(&self, vars: &Variables) -> Result<String, TemplateError> {
        let ctx = to_context(vars)?;
        let template = self.env.get_template(NAME).map_err(|e| self.render_error(&e))?;
        template.render(ctx).map_err(|e| self.render_error(&e))
    }

    /// The names the template reads from its variables (excluding Jinja locals and section fields
    /// that may come from an element), sorted: what a variables pane or `--var` check needs.
    pub fn variables(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self
            .env
            .get_template(NAME)
            .map(|t| t.undeclared_variables(false))
            .unwrap_or_default()
            .into_iter()
            .filter(|n| !n.starts_with(RESERVED))
            .collect();
        names.extend(self.top_level_names.iter().cloned());
        names
    }

    fn render_error(&self, e: &Error) -> TemplateError {
        let part = self.part;
        let detail = e.detail().unwrap_or_default();
        if let Some(name) = undefined_name(detail) {
            return TemplateError::Undefined { part, name, line: e.line().unwrap_or(1) };
        }
        let message = match e.kind() {
            ErrorKind::OutOfFuel => {
                format!("did not finish within {RENDER_FUEL} steps (a loop too long to render): stopped")
            }
            _ if detail.is_empty() => e.kind().to_string(),
            kind => format!("{kind}: {detail}"),
        };
        TemplateError::Render { part, line: e.line(), message }
    }
}

/// Renders a prompt's system text (if any) and template with the same variables.
pub fn render_prompt(system: Option<&str>, template: &str, vars: &Variables) -> Result<RenderedPrompt, TemplateError> {
    let system = match system {
        Some(src) => Some(Template::compile(Part::System, src)?.render(vars)?),
        None => None,
    };
    let user = Template::compile(Part::Template, template)?.render(vars)?;
    Ok(RenderedPrompt { system, user })
}

/// Merges variable layers, later layers winning name by name (TrustGraph's `terms | input`).
pub fn merge(layers: &[&Variables]) -> Variables {
    let mut merged = Variables::new();
    for layer in layers {
        for (name, value) in layer.iter() {
            merged.insert(name.clone(), value.clone());
        }
    }
    merged
}

/// The name in minijinja's "`name` is undefined" detail (also inside other messages).
fn undefined_name(detail: &str) -> Option<String> {
    let end = detail.find("` is undefined")?;
    let start = detail[..end].rfind('`')? + 1;
    Some(detail[start..end].to_string())
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(RENDER_FUEL));
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_debug(true);
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder().keep_trailing_newline(true).build() {
        env.set_syntax(syntax);
    }
    env.set_formatter(format_value);
    env.add_function(mustache::LOOKUP, lookup);
    env.add_function(mustache::SECTION, section);
    env.add_function(mustache::FALSY, |v: Value| falsy(&v));
    env.add_function(mustache::DOT, dot);
    // promptfoo's `load` filter: a variable's JSON text as a value (`{{ (config | load).tone }}`).
    env.add_filter("load", load);
    env
}

/// The value the JSON text `text` holds (an error naming why it is not JSON).
fn load(text: String) -> Result<Value, Error> {
    let parsed: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("`load`: the text is not JSON: {e}")))?;
    to_value(&parsed, 0).ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "`load`: the JSON nests too deeply"))
}

/// Mustache name lookup: each element innermost first, then the variables; the whole path in each.
fn lookup(state: &State, elements: Vec<Value>, path: &str) -> Result<Value, Error> {
    let segments: Vec<&str> = path.split('.').collect();
    let first = segments.first().copied().unwrap_or(path);
    let roots = elements
        .into_iter()
        .filter(|e| e.kind() == ValueKind::Map)
        .chain(state.lookup(first).map(|root| Value::from_pairs([(first, root)])));
    for root in roots {
        let mut value = root;
        let mut found = true;
        for segment in &segments {
            // Fields of maps and of engine objects (such as Jinja's `loop`); nothing else has fields.
            let next = if matches!(value.kind(), ValueKind::Map | ValueKind::Plain) {
                value.get_attr(segment).unwrap_or_default()
            } else {
                Value::UNDEFINED
            };
            if next.is_undefined() {
                found = false;
                break;
            }
            value = next;
        }
        if found {
            return Ok(value);
        }
    }
    Err(Error::new(ErrorKind::UndefinedError, format!("`{path}` is undefined")))
}

/// Mustache's falsy values: null, false, "", [] (an empty map is truthy, as in PtcRunner).
fn falsy(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => true,
        ValueKind::Bool => !value.is_true(),
        ValueKind::String => value.as_str().is_some_and(str::is_empty),
        ValueKind::Seq => value.len() == Some(0),
        _ => false,
    }
}

/// The elements a section renders: a list's items, a truthy value once, nothing for a falsy one.
fn section(value: Value) -> Value {
    if falsy(&value) {
        Value::from(Vec::<Value>::new())
    } else if value.kind() == ValueKind::Seq {
        value
    } else {
        Value::from(vec![value])
    }
}

/// `{{.}}`: the element, which must be a scalar.
fn dot(value: Value) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::Map | ValueKind::Seq => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "`{{{{.}}}}` needs a scalar element, got a {}; use `{{{{field}}}}` for a field of it",
                value.kind()
            ),
        )),
        _ => Ok(value),
    }
}

fn format_value(out: &mut minijinja::Output, state: &mut State, value: &Value) -> Result<(), Error> {
    match value.kind() {
        ValueKind::None => out.write_str("null").map_err(Error::from),
        ValueKind::Bool => out.write_str(if value.is_true() { "true" } else { "false" }).map_err(Error::from),
        ValueKind::Map | ValueKind::Seq => {
            let mut json = String::new();
            write_json(&mut json, value);
            out.write_str(&json).map_err(Error::from)
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// Writes a template value as JSON (`", "` and `": "` separators, like Python's `json.dumps`).
fn write_json(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => out.push_str(&value.to_string()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            for (index, item) in value.try_iter().into_iter().flatten().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_json(out, &item);
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            for (index, key) in value.try_iter().into_iter().flatten().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push_str(&json_string(&key.to_string()));
                out.push_str(": ");
                write_json(out, &value.get_item(&key).unwrap_or_default());
            }
            out.push('}');
        }
        _ => out.push_str(&json_string(&value.to_string())),
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The render context: every variable converted to a template value.
fn to_context(vars: &Variables) -> Result<Value, TemplateError> {
    let mut pairs = Vec::with_capacity(vars.len());
    for (name, value) in vars {
        let converted = to_value(value, 0).ok_or_else(|| TemplateError::Variable {
            name: name.clone(),
            message: format!("nested more than {MAX_VALUE_DEPTH} levels deep"),
        })?;
        pairs.push((name.as_str(), converted));
    }
    Ok(Value::from_pairs(pairs))
}

/// A JSON value as a template value (`None` when nested deeper than [`MAX_VALUE_DEPTH`]).
pub fn to_value(value: &serde_json::Value, depth: usize) -> Option<Value> {
    if depth > MAX_VALUE_DEPTH {
        return None;
    }
    Some(match value {
        serde_json::Value::Null => Value::from(()),
        serde_json::Value::Bool(b) => Value::from(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => {
            items.iter().map(|item| to_value(item, depth + 1)).collect::<Option<Vec<Value>>>().map(Value::from)?
        }
        serde_json::Value::Object(map) => {
            let pairs =
                map.iter().map(|(k, v)| to_value(v, depth + 1).map(|v| (k.as_str(), v))).collect::<Option<Vec<_>>>()?;
            Value::from_pairs(pairs)
        }
    })
}

#[cfg(test)]
mod tests;
