//! A case's expectations checked against its prompt, before any model call: the expected answer
//! read (inline or from `expected_file`) and validated against the schema (each item against the
//! item schema, a value against the whole), every pointer (`path` of a check, `match`,
//! `compare_fields`, `ignore_fields`) named a field some branch of the item schema declares (when
//! the schema declares any), and the pairing key settled (`match`, else the schema's default).
//! Every mistake is a [`PromptError`] at the file:line of what is wrong, naming the case and field.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::gold::{self, Gold};
use super::shape::{shape, Shape};
use super::{first_segment, pointer, At, CheckKind, CheckSpec, EvalSettings, Expected, Place};
use crate::output::ResponseType;
use crate::prompt::file::{Case, PromptError, PromptFile};
use crate::prompt::reading::setup_for_prompt;
use crate::schema::Check;

pub use super::shape::PairKey;

/// The expected answer, read and validated.
#[derive(Clone, Debug, PartialEq)]
pub enum ExpectedAnswer {
    /// A jsonl answer's lines, or a json array answer's elements.
    Items(Vec<Value>),
    /// A json answer that is one value (or a text answer's text), scored as one item.
    Value(Value),
}

impl ExpectedAnswer {
    /// The expected items (a value is one).
    pub fn items(&self) -> Vec<&Value> {
        match self {
            ExpectedAnswer::Items(items) => items.iter().collect(),
            ExpectedAnswer::Value(value) => vec![value],
        }
    }
}

/// One case's expectations, ready to score against.
#[derive(Clone)]
pub struct Resolved {
    pub case: Option<String>,
    pub response_type: ResponseType,
    pub expected: Option<ExpectedAnswer>,
    /// The pairing key: the case's `match`, the prompt's, or the schema's default.
    pub key: PairKey,
    /// The prompt's `[eval]` settings.
    pub settings: EvalSettings,
    /// The prompt's checks, then the case's.
    pub checks: Vec<CheckSpec>,
    /// How many of `checks` are the prompt's.
    pub prompt_checks: usize,
    /// The case's `pass_score`.
    pub pass_score: Option<f64>,
    /// What one item is checked against (a truncation strategy keeps only the items that pass it).
    pub item_check: Option<Arc<dyn Check>>,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("case", &self.case)
            .field("response_type", &self.response_type)
            .field("expected", &self.expected)
            .field("key", &self.key)
            .field("settings", &self.settings)
            .field("checks", &self.checks)
            .field("item_check", &self.item_check.is_some())
            .finish()
    }
}

/// A prompt's schema compiled once, resolving the expectations of any of its cases.
pub struct Resolver<'a> {
    prompt: &'a PromptFile,
    base_dir: &'a Path,
    shape: Shape,
    /// The whole answer's check and one item's.
    check: Option<Arc<dyn Check>>,
    item_check: Option<Arc<dyn Check>>,
}

impl<'a> Resolver<'a> {
    /// Compiles `prompt`'s schema (resolved against `base_dir`) once.
    pub fn new(prompt: &'a PromptFile, base_dir: &'a Path) -> Result<Resolver<'a>, PromptError> {
        let schema = prompt.resolve_schema(base_dir)?;
        let setup = setup_for_prompt(prompt, Path::new(&prompt.id), base_dir, None).map_err(|e| {
            PromptError::Expectation { id: prompt.id.clone(), message: format!("the schema cannot be used: {e:#}") }
        })?;
        let shape = shape(schema.as_deref(), prompt.response_type);
        Ok(Resolver { prompt, base_dir, shape, check: setup.check, item_check: setup.item_check })
    }

    /// Every case's expectations (the prompt's own variables first when it has no cases), so a bad
    /// one is an error before any model call.
    pub fn validate_all(&self) -> Result<(), PromptError> {
        for case in &self.prompt.cases {
            self.case(Some(&case.name))?;
        }
        self.case(None).map(drop)
    }

    /// The expectations of `case` (`None`: the prompt on its own variables: the prompt's checks only).
    pub fn case(&self, case: Option<&str>) -> Result<Resolved, PromptError> {
        let found = case.map(|name| self.prompt.case(name)).transpose()?;
        self.given(found)
    }

    /// The expectations of `found`, a case the prompt need not hold (a dataset's row read when its
    /// cell runs); `None`: the prompt on its own variables.
    pub fn given(&self, found: Option<&Case>) -> Result<Resolved, PromptError> {
        let prompt = self.prompt;
        let case = found.map(|c| c.name.as_str());
        let whose = |what: &str| match case {
            Some(name) => format!("case {name:?}: {what}"),
            None => what.to_string(),
        };
        let mut checks = prompt.checks.clone();
        for check in &prompt.checks {
            self.check_pointer(check, &|what: &str| what.to_string())?;
        }
        if let Some(found) = found {
            for check in &found.checks {
                self.check_pointer(check, &whose)?;
            }
            checks.extend(found.checks.iter().cloned());
        }
        let expected_table = found.and_then(|c| c.expected.as_ref());
        let settings = &prompt.eval;
        for (name, fields) in [
            ("`[eval]` match", settings.match_on.as_ref().map(|f| f.0.clone())),
            ("`[eval]` compare_fields", settings.compare_fields.clone()),
            ("`[eval]` ignore_fields", Some(settings.ignore_fields.clone())),
            ("`match`", expected_table.and_then(|e| e.match_on.as_ref()).map(|f| f.0.clone())),
        ] {
            let place =
                if name == "`match`" { expected_table.and_then(|e| e.at.0.as_ref()) } else { settings.at.0.as_ref() };
            for field in fields.iter().flatten() {
                if let Some(message) = self.undeclared(&pointer(field)) {
                    let message = format!("{name} names {field:?}: {message}");
                    let message = if name == "`match`" { whose(&message) } else { message };
                    return Err(self.error(place, message));
                }
            }
        }
        let expected = match expected_table {
            Some(table) => Some(self.expected(table, &whose)?),
            None => None,
        };
        let key = match expected_table.and_then(|e| e.match_on.as_ref()).or(settings.match_on.as_ref()) {
            Some(fields) => PairKey::Fields(fields.pointers()),
            None => match (&expected, &self.shape.key) {
                (Some(ExpectedAnswer::Value(_)), _) => PairKey::Answer,
                (_, None) => PairKey::Whole,
                (_, Some(key)) => key.clone(),
            },
        };
        Ok(Resolved {
            case: case.map(str::to_string),
            response_type: prompt.response_type,
            expected,
            key,
            settings: settings.clone(),
            checks,
            prompt_checks: prompt.checks.len(),
            pass_score: found.and_then(|c| c.pass_score),
            item_check: self.item_check.clone(),
        })
    }

    /// The expected answer of one case, read and validated.
    fn expected(&self, table: &Expected, whose: &dyn Fn(&str) -> String) -> Result<ExpectedAnswer, PromptError> {
        let response_type = self.prompt.response_type;
        let (answer, places) = match (&table.items, &table.value, &table.expected_file) {
            (Some(items), _, _) => (ExpectedAnswer::Items(items.clone()), table.item_at.0.clone()),
            (None, Some(value), _) => (ExpectedAnswer::Value(value.clone()), table.item_at.0.clone()),
            (None, None, Some(file)) => match gold::read(self.base_dir, file, table.at.0.as_ref())? {
                Gold::Items(items, places) => (ExpectedAnswer::Items(items), places),
                Gold::Value(value, place) => (ExpectedAnswer::Value(value), vec![place]),
            },
            (None, None, None) => {
                let message = whose("`[cases.expected]` needs one of `items`, `value` or `expected_file`");
                return Err(self.error(table.at.0.as_ref(), message));
            }
        };
        let place = |index: usize| places.get(index).and_then(|at: &At| at.0.as_ref()).or(table.at.0.as_ref());
        match (&answer, response_type) {
            (ExpectedAnswer::Value(_), ResponseType::Jsonl) => {
                let message = whose("a jsonl answer is a list of items: write `items = [...]`, not `value`");
                return Err(self.error(place(0), message));
            }
            (ExpectedAnswer::Items(_), ResponseType::Text) => {
                let message = whose("a text answer is one text: write `value = \"...\"`, not `items`");
                return Err(self.error(place(0), message));
            }
            (ExpectedAnswer::Value(value), ResponseType::Text) if !value.is_string() => {
                let message = whose(&format!("a text answer's expected `value` is a string, not {value}"));
                return Err(self.error(place(0), message));
            }
            (ExpectedAnswer::Items(_), ResponseType::Json) if self.check.is_some() && !self.shape.list => {
                let message = whose("the schema describes one value, not a list: write `value = {...}`, not `items`");
                return Err(self.error(place(0), message));
            }
            _ => {}
        }
        let (check, what) = match &answer {
            ExpectedAnswer::Items(_) => (self.item_check.as_ref(), "expected item"),
            ExpectedAnswer::Value(_) => (self.check.as_ref(), "expected value"),
        };
        if let Some(check) = check {
            for (index, item) in answer.items().into_iter().enumerate() {
                if let Err(issues) = check.check(item) {
                    let said: Vec<String> =
                        issues
                            .iter()
                            .take(3)
                            .map(|i| {
                                if i.path.is_empty() {
                                    i.message.clone()
                                } else {
                                    format!("{}: {}", i.path, i.message)
                                }
                            })
                            .collect();
                    let which = match answer {
                        ExpectedAnswer::Items(_) => format!("{what} {}", index + 1),
                        ExpectedAnswer::Value(_) => what.to_string(),
                    };
                    let message = whose(&format!("{which} does not match the schema: {}", said.join("; ")));
                    return Err(self.error(place(index), message));
                }
            }
        }
        Ok(answer)
    }

    /// A check's `path` must point at a field the schema can have.
    fn check_pointer(&self, check: &CheckSpec, whose: &dyn Fn(&str) -> String) -> Result<(), PromptError> {
        let path = check.pointer();
        if path.is_empty() || !check.kind.reads_items() || check.kind == CheckKind::Items {
            return Ok(());
        }
        let label = check.label();
        if self.prompt.response_type == ResponseType::Text {
            let message = whose(&format!("check `{label}`: a text answer has no fields; leave `path` out"));
            return Err(self.error(check.at.0.as_ref(), message));
        }
        // With `each = false` a list answer's pointer starts at an item's index.
        let in_item = if !check.each() && self.shape.list {
            let rest = path.strip_prefix('/').unwrap_or_default();
            let (index, rest) = rest.split_once('/').map_or((rest, ""), |(i, r)| (i, r));
            if !(index == "-" || index.parse::<usize>().is_ok()) {
                let message = whose(&format!(
                    "check `{label}`: with `each = false` the path starts at an item's index (\"/0/...\"), not {path:?}"
                ));
                return Err(self.error(check.at.0.as_ref(), message));
            }
            if rest.is_empty() {
                return Ok(());
            }
            format!("/{rest}")
        } else {
            path.to_string()
        };
        match self.undeclared(&in_item) {
            Some(message) => Err(self.error(check.at.0.as_ref(), whose(&format!("check `{label}`: {message}")))),
            None => Ok(()),
        }
    }

    /// Why `pointer` (into one item) cannot exist: its first field is declared by no branch.
    fn undeclared(&self, pointer: &str) -> Option<String> {
        let declared = self.shape.declared.as_ref()?;
        let first = first_segment(pointer)?;
        (!declared.contains(&first))
            .then(|| format!("the schema declares no field {first:?} (its fields are: {})", declared.join(", ")))
    }

    /// An error at `place`, or naming the prompt when the place is not known (a prompt built in memory).
    fn error(&self, place: Option<&Place>, message: String) -> PromptError {
        match place {
            Some(place) => {
                PromptError::Invalid { path: place.path.clone(), line: place.line, column: place.column, message }
            }
            None => PromptError::Expectation { id: self.prompt.id.clone(), message },
        }
    }
}

/// Every case's expectations checked against `prompt` (its schema resolved against `base_dir`): what
/// a run setup calls so a bad expected item or check is an input error before any model call.
pub fn validate_expectations(prompt: &PromptFile, base_dir: &Path) -> Result<(), PromptError> {
    if prompt.checks.is_empty()
        && prompt.eval.is_empty()
        && prompt.cases.iter().all(|c| c.expected.is_none() && c.checks.is_empty())
    {
        return Ok(());
    }
    Resolver::new(prompt, base_dir)?.validate_all()
}
