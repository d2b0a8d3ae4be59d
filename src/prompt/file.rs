//! The prompt file: a TOML document with the prompt's texts, response type, schema, variables,
//! named test cases and run settings; loaded with errors at file:line:column, saved atomically.
//!
//! ```toml
//! id = "extract-definitions"
//! description = "Entities and their definitions, one JSON object per line"
//! response_type = "jsonl"            # text | json | jsonl (default text, as TrustGraph)
//! profile = "lenient"                # optional: lenient | strict | trustgraph | ptc
//! max_turns = 1                      # optional: validation retries (PtcRunner's loop)
//! system = "You are ..."             # optional
//! template = """..."""               # the user message: Jinja + PtcRunner's Mustache forms
//! schema = '''{"type": "object"}'''  # at most one of: schema (JSON text, or a TOML table),
//!                                    # schema_file (relative to this file), signature
//! cases_file = "cases.jsonl"         # optional: more cases, one a row (.jsonl, .csv, .yaml; `dataset`)
//! [variables]                        # defaults (any JSON value)
//! text = "..."
//! [terms]                            # TrustGraph's global terms: under the variables
//! [provider]                         # name, model, base_url, key_env, temperature, max_tokens, structured, stop,
//!                                    # thinking (the local model thinks first: true, or a budget of tokens)
//! [eval]                             # how cases are scored: match, pass_f1, pass_fields,
//!                                    # compare_fields | ignore_fields, tolerance, exact
//! [[checks]]                         # checks of every case's answer (see `prompt::expect`)
//! kind = "unique"
//! path = "/entity"
//! [[cases]]                          # named test cases: name, variables, expect (notes)
//! name = "astronomy"
//! variables = { text = "..." }
//! [cases.expected]                   # the expected answer: items | value | expected_file, match
//! items = [{entity = "pulsar", definition = "..."}]
//! [[cases.checks]]                   # checks of this case only
//! kind = "items"
//! min = 1
//! ```

mod case_names;
mod edit;
mod error;
pub mod named;
mod on_disk;
mod position;
mod save;
mod thinking;

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

use case_names::CaseNames;

pub use error::PromptError;
use on_disk::read_text;
pub use on_disk::OnDisk;
use position::{parse_schema_text, Lines};
pub use save::{write_atomic, write_atomic_with, write_over};
pub use thinking::Thinking;

use super::expect::{
    parse_check, parse_eval, parse_expected, At, CheckSpec, EvalSettings, Expected, Place, RawCheck, RawEval,
    RawExpected,
};
use super::signature::{self, Signature};
use super::template::{self, RenderedPrompt, Variables};
use crate::output::{Profile, ResponseType};

/// A prompt as its TOML file describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct PromptFile {
    /// The prompt's name (TrustGraph's template id); the file stem when the file has none.
    pub id: String,
    pub description: Option<String>,
    /// The system message template.
    pub system: Option<String>,
    /// The user message template.
    pub template: String,
    pub response_type: ResponseType,
    /// Inline JSON Schema (for `jsonl`, of each line; for `json`, of the whole answer).
    pub schema: Option<Value>,
    /// A `.json` schema file, relative to the prompt file.
    pub schema_file: Option<PathBuf>,
    /// A PtcRunner signature, e.g. `(text :string) -> {sentiment :string, score :float}`.
    pub signature: Option<String>,
    /// Default variables.
    pub variables: Variables,
    /// TrustGraph's global terms: available to system and template, overridden by the variables.
    pub terms: Variables,
    /// Named test cases: the file's `[[cases]]`, then the rows of its dataset once one is read in
    /// ([`PromptFile::dataset`]).
    pub cases: Vec<Case>,
    /// A dataset of more cases beside the prompt (`cases_file`, relative to the prompt file).
    pub cases_file: Option<PathBuf>,
    /// Where the cases read from a dataset begin in `cases` and where each was written; `None` until
    /// `dataset::read_into` reads one in. A save writes the inline cases alone.
    pub dataset: Option<DatasetCases>,
    /// How many turns a run may take (validation errors fed back), PtcRunner's `max_turns`.
    pub max_turns: Option<u32>,
    pub provider: ProviderSettings,
    /// The parser profile to read answers with (default: lenient).
    pub profile: Option<Profile>,
    /// How cases are scored (`[eval]`): pairing key, pass thresholds, fields compared, tolerance.
    pub eval: EvalSettings,
    /// Checks every case's answer must pass (`[[checks]]`).
    pub checks: Vec<CheckSpec>,
    /// Finds a case by name (`case`) without reading them all.
    case_names: CaseNames,
}

/// A named set of variables to run the prompt with, and what its answer should be.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    /// What a good answer looks like, in words (notes for the author).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Merged over the prompt's default variables.
    #[serde(default, skip_serializing_if = "Variables::is_empty")]
    pub variables: Variables,
    /// The expected answer (`[cases.expected]`): items, a value, or a file of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
    /// This case's own checks (`[[cases.checks]]`), run after the prompt's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSpec>,
    /// The weighted score of its `assert` checks that passes the case (promptfoo's test `threshold`);
    /// none: each must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_score: Option<f64>,
}

/// The cases of `cases` that came from a dataset file: the tail of `cases` from `first` on, the file
/// they were read from and the line each row starts on (in order).
#[derive(Clone, Debug, PartialEq)]
pub struct DatasetCases {
    pub path: PathBuf,
    pub first: usize,
    pub lines: Vec<usize>,
}

/// A case as the file writes it, with the places of its expectations and checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    expect: Option<String>,
    #[serde(default)]
    variables: Variables,
    expected: Option<Spanned<RawExpected>>,
    #[serde(default)]
    checks: Vec<RawCheck>,
    pass_score: Option<f64>,
}

/// Run settings, kept as written; the provider layer interprets them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai`, `ollama`, `anthropic`, `local` or `replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The environment variable holding the server's key, in place of the provider's own
    /// (`OPENAI_API_KEY`, …): its name only; the key is read when the run starts, never written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// `none`, `json-object`, `json-schema` or `constrained`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The run's total deadline in seconds (every turn and wait included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// The largest answer, in bytes of text per turn, the client keeps reading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_answer_bytes: Option<u64>,
    /// A jsonl answer stops once it holds this many items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    /// A jsonl answer stops at this many repeated lines in a row (0: repeats never stop it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeats: Option<u32>,
    /// The local model's repetition penalty (1 is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f64>,
    /// How many of the answer's last tokens the repetition penalty looks at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_last_n: Option<u32>,
    /// Ask an OpenAI-compatible server for each token's probability (`logprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<bool>,
    /// The local model thinks before its answer (a chat template with a thinking mode, Qwen3's):
    /// `true` (the default budget) or a budget of thinking tokens; `false` is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// A key written in the prompt's source (a promptfoo config's `apiKey: sk-…`): held in memory for
    /// this prompt's requests alone, never read from a prompt file, written, printed or recorded.
    #[serde(skip)]
    pub key: Option<crate::provider::ApiKey>,
}

impl ProviderSettings {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ProviderSettings::default()
    }
}

/// Where a resolved schema came from.
#[derive(Clone, Debug, PartialEq)]
pub enum SchemaOrigin {
    Inline,
    /// The schema file, as resolved against the prompt's directory.
    File(PathBuf),
    /// The output part of the signature, as PtcRunner's JSON mode derives it.
    Signature(Signature),
}

/// A prompt's schema as JSON, whatever way the file gave it. Dereferences to the schema.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedSchema {
    pub schema: Value,
    pub origin: SchemaOrigin,
}

impl std::ops::Deref for ResolvedSchema {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.schema
    }
}

/// The file as serde reads it, with spans for errors.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrompt {
    id: Option<String>,
    description: Option<String>,
    system: Option<String>,
    template: String,
    response_type: Option<ResponseType>,
    schema: Option<Spanned<Value>>,
    schema_file: Option<Spanned<PathBuf>>,
    signature: Option<Spanned<String>>,
    #[serde(default)]
    variables: Variables,
    #[serde(default)]
    terms: Variables,
    #[serde(default)]
    cases: Vec<Spanned<RawCase>>,
    cases_file: Option<Spanned<PathBuf>>,
    max_turns: Option<u32>,
    #[serde(default)]
    provider: ProviderSettings,
    profile: Option<Profile>,
    eval: Option<Spanned<RawEval>>,
    #[serde(default)]
    checks: Vec<RawCheck>,
}

impl PromptFile {
    /// A `text` prompt with nothing but an id and a template; set the other fields as needed.
    pub fn new(id: impl Into<String>, template: impl Into<String>) -> PromptFile {
        PromptFile {
            id: id.into(),
            description: None,
            system: None,
            template: template.into(),
            response_type: ResponseType::Text,
            schema: None,
            schema_file: None,
            signature: None,
            variables: Variables::new(),
            terms: Variables::new(),
            cases: Vec::new(),
            cases_file: None,
            dataset: None,
            max_turns: None,
            provider: ProviderSettings::default(),
            profile: None,
            eval: EvalSettings::default(),
            checks: Vec::new(),
            case_names: CaseNames::default(),
        }
    }

    /// The prompt without its cases (nor the dataset they were read from), made without copying them
    /// (a run of one case needs that one alone).
    pub fn without_cases(&self) -> PromptFile {
        // Every field named: a field added to the prompt file is a compile error here, not a field lost.
        let PromptFile {
            id,
            description,
            system,
            template,
            response_type,
            schema,
            schema_file,
            signature,
            variables,
            terms,
            cases: _,
            cases_file,
            dataset: _,
            case_names: _,
            max_turns,
            provider,
            profile,
            eval,
            checks,
        } = self;
        PromptFile {
            id: id.clone(),
            description: description.clone(),
            system: system.clone(),
            template: template.clone(),
            response_type: *response_type,
            schema: schema.clone(),
            schema_file: schema_file.clone(),
            signature: signature.clone(),
            variables: variables.clone(),
            terms: terms.clone(),
            cases: Vec::new(),
            cases_file: cases_file.clone(),
            dataset: None,
            case_names: CaseNames::default(),
            max_turns: *max_turns,
            provider: provider.clone(),
            profile: *profile,
            eval: eval.clone(),
            checks: checks.clone(),
        }
    }

    /// Reads and checks a prompt file; errors name the file, line and column.
    pub fn load(path: impl AsRef<Path>) -> Result<PromptFile, PromptError> {
        Ok(Self::read(path)?.prompt)
    }

    /// Reads and checks a prompt file, keeping its text for a save in place ([`OnDisk::save`]).
    pub fn read(path: impl AsRef<Path>) -> Result<OnDisk, PromptError> {
        let text = read_text(path.as_ref())?;
        Ok(OnDisk { prompt: Self::from_toml_str(&text, path.as_ref())?, text })
    }
}

impl PromptFile {
    /// Parses a prompt file's text; `path` names it in errors and gives the default id.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<PromptFile, PromptError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let lines = Lines::new(text);
        let at = |span: Range<usize>| {
            let (line, column) = lines.line_col(span.start);
            (path.to_path_buf(), line, column)
        };
        let raw: RawPrompt = toml::from_str(text).map_err(|e| {
            let (path, line, column) = at(e.span().unwrap_or(0..0));
            PromptError::Toml { path, line, column, message: e.message().trim().to_string() }
        })?;
        let sources: Vec<(&str, Range<usize>)> = [
            raw.schema.as_ref().map(|s| ("schema", s.span())),
            raw.schema_file.as_ref().map(|s| ("schema_file", s.span())),
            raw.signature.as_ref().map(|s| ("signature", s.span())),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let [(first, _), (second, span), ..] = sources.as_slice() {
            let (path, line, column) = at(span.clone());
            return Err(PromptError::Invalid {
                path,
                line,
                column,
                message: format!(
                    "both `{first}` and `{second}` are set; a prompt has one of schema, schema_file or signature"
                ),
            });
        }
        if let Some(file) = &raw.schema_file {
            if let Some(message) = named::refused_as_written("schema_file", file.get_ref()) {
                let (path, line, column) = at(file.span());
                return Err(PromptError::Invalid { path, line, column, message });
            }
        }
        if let Some(file) = &raw.cases_file {
            if let Some(message) = named::refused_as_written("cases_file", file.get_ref()) {
                let (path, line, column) = at(file.span());
                return Err(PromptError::Invalid { path, line, column, message });
            }
        }
        let schema = match raw.schema {
            Some(spanned) => {
                let span = spanned.span();
                Some(match spanned.into_inner() {
                    Value::String(json) => {
                        parse_schema_text(text, span, &json).map_err(|(line, column, message)| {
                            PromptError::Invalid { path: path.to_path_buf(), line, column, message }
                        })?
                    }
                    value => value,
                })
            }
            None => None,
        };
        let locate = |span: Range<usize>| {
            let (path, line, column) = at(span);
            At(Some(Place { path, line, column }))
        };
        // An expectation's mistake, at its field (or its table when the field has no span).
        let invalid = |table: Range<usize>, (span, message): (Range<usize>, String)| {
            let (path, line, column) = at(if span.is_empty() { table } else { span });
            PromptError::Invalid { path, line, column, message }
        };
        let checks = |raw: Vec<RawCheck>| -> Result<Vec<CheckSpec>, PromptError> {
            raw.into_iter()
                .map(|table| {
                    let span = table.span();
                    let fields =
                        table.into_inner().into_iter().map(|(k, v)| (k, v.get_ref().clone(), v.span())).collect();
                    parse_check(fields, locate(span.clone())).map_err(|e| invalid(span, e))
                })
                .collect()
        };
        let mut cases: Vec<Case> = Vec::with_capacity(raw.cases.len());
        let mut names = HashSet::with_capacity(raw.cases.len());
        for spanned in raw.cases {
            let span = spanned.span();
            let case = spanned.into_inner();
            if !names.insert(case.name.clone()) {
                let (path, line, column) = at(span);
                return Err(PromptError::Invalid {
                    path,
                    line,
                    column,
                    message: format!("a second case named {:?}", case.name),
                });
            }
            let expected = match case.expected {
                Some(expected) => {
                    let table = expected.span();
                    Some(parse_expected(expected, &locate).map_err(|e| invalid(table, e))?)
                }
                None => None,
            };
            cases.push(Case {
                name: case.name,
                expect: case.expect,
                variables: case.variables,
                expected,
                checks: checks(case.checks)?,
                pass_score: case.pass_score,
            });
        }
        let eval = match raw.eval {
            Some(eval) => {
                let table = eval.span();
                parse_eval(eval, &locate).map_err(|e| invalid(table, e))?
            }
            None => EvalSettings::default(),
        };
        let checks = checks(raw.checks)?;
        let id = match raw.id {
            Some(id) if id.trim().is_empty() => {
                let (path, line, column) = at(0..0);
                return Err(PromptError::Invalid { path, line, column, message: "`id` is empty".into() });
            }
            Some(id) => id,
            None => path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "prompt".into()),
        };
        Ok(PromptFile {
            id,
            description: raw.description,
            system: raw.system,
            template: raw.template,
            response_type: raw.response_type.unwrap_or(ResponseType::Text),
            schema,
            schema_file: raw.schema_file.map(Spanned::into_inner),
            signature: raw.signature.map(Spanned::into_inner),
            variables: raw.variables,
            terms: raw.terms,
            cases,
            cases_file: raw.cases_file.map(Spanned::into_inner),
            dataset: None,
            max_turns: raw.max_turns,
            provider: raw.provider,
            profile: raw.profile,
            eval,
            checks,
            case_names: CaseNames::default(),
        })
    }

    /// The prompt's schema as JSON: inline, read from `schema_file` (relative to `base_dir`, the
    /// prompt file's directory), or the output schema of the signature. `None` when it has none.
    pub fn resolve_schema(&self, base_dir: &Path) -> Result<Option<ResolvedSchema>, PromptError> {
        let count = [self.schema.is_some(), self.schema_file.is_some(), self.signature.is_some()]
            .iter()
            .filter(|&&b| b)
            .count();
        if count > 1 {
            return Err(PromptError::Conflict { id: self.id.clone() });
        }
        if let Some(schema) = &self.schema {
            return Ok(Some(ResolvedSchema { schema: schema.clone(), origin: SchemaOrigin::Inline }));
        }
        if let Some(file) = &self.schema_file {
            let (path, text) = named::read(base_dir, "schema_file", file, None, crate::files::SCHEMA_FILE)?;
            let text_no_bom = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let schema: Value = serde_json::from_str(text_no_bom).map_err(|e| PromptError::SchemaFile {
                path: path.clone(),
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?;
            return Ok(Some(ResolvedSchema { schema, origin: SchemaOrigin::File(path) }));
        }
        if let Some(src) = &self.signature {
            let sig = signature::parse(src)
                .map_err(|e| PromptError::Signature { id: self.id.clone(), error: Box::new(e) })?;
            return Ok(Some(ResolvedSchema { schema: sig.output_schema(), origin: SchemaOrigin::Signature(sig) }));
        }
        Ok(None)
    }

    /// The cases the file itself writes (`[[cases]]`): every case but a dataset's.
    pub fn inline_cases(&self) -> &[Case] {
        let end = self.dataset.as_ref().map_or(self.cases.len(), |d| d.first.min(self.cases.len()));
        self.cases.get(..end).unwrap_or(&self.cases)
    }

    /// The default variables with `case`'s variables merged over them (name by name).
    pub fn variables_for(&self, case: Option<&str>) -> Result<Variables, PromptError> {
        let Some(name) = case else { return Ok(self.variables.clone()) };
        let case = self.case(name)?;
        Ok(template::merge(&[&self.variables, &case.variables]))
    }

    /// The case named `name`; an unknown name is an error listing the known ones.
    pub fn case(&self, name: &str) -> Result<&Case, PromptError> {
        let found = self.case_names.find(&self.cases, name).and_then(|at| self.cases.get(at));
        found.ok_or_else(|| PromptError::UnknownCase {
            id: self.id.clone(),
            name: name.to_string(),
            known: self.cases.iter().map(|c| c.name.clone()).collect(),
        })
    }

    /// Renders system and template with the terms, the defaults, the case and then `overrides`
    /// (each layer over the one before).
    pub fn render(&self, case: Option<&str>, overrides: &Variables) -> Result<RenderedPrompt, PromptError> {
        let vars = template::merge(&[&self.terms, &self.variables_for(case)?, overrides]);
        template::render_prompt(self.system.as_deref(), &self.template, &vars)
            .map_err(|error| PromptError::Template { id: self.id.clone(), error })
    }

    /// Replaces `schema_file` or `signature` by the inline schema they resolve to.
    pub fn inline_schema(&mut self, base_dir: &Path) -> Result<(), PromptError> {
        if let Some(resolved) = self.resolve_schema(base_dir)? {
            self.schema = Some(resolved.schema);
            self.schema_file = None;
            self.signature = None;
        }
        Ok(())
    }

    /// The prompt as TOML text (inline schemas as pretty JSON text).
    pub fn to_toml_string(&self) -> Result<String, PromptError> {
        save::to_toml(self)
    }

    /// Writes the prompt to `path`, atomically: a new file as TOML in the fixed key order; a prompt
    /// file already there edited in place, only what differs rewritten ([`OnDisk::save`]). A file
    /// there that does not read as a prompt is not written over.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PromptError> {
        let path = path.as_ref();
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_over(path, "", &self.to_toml_string()?),
            _ => {
                let on_disk = PromptFile::read(path).map_err(|e| PromptError::Write {
                    path: path.to_path_buf(),
                    message: format!("it is there and is not a prompt file ({e}), so it is not written over"),
                })?;
                on_disk.save(path, self, None).map(|_| ())
            }
        }
    }
}

#[cfg(test)]
mod tests;
