//! A config as tunebench's own prompts: one prompt file per column (each prompt label × each
//! provider label), the provider's settings in its `[provider]` (kind, model, `apiBaseUrl`, the key's
//! variable, `temperature`, `max_tokens`, the structured mode a `response_format` asks), the tests as
//! its cases (variables, assertions as checks of kind `assert`, `threshold` as `pass_score`). `eval
//! CONFIG` runs these in memory and `import promptfoo` writes them: the two are the same prompts.

use serde_json::Value;

use super::{Assert, Config, Prompt, Provider};
use crate::output::ResponseType;
use crate::prompt::expect::{At, CheckKind, CheckSpec, Place};
use crate::prompt::file::{Case, PromptFile};

/// One column of a config's matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// `prompt label · provider label`.
    pub label: String,
    /// The prompt on that provider, its tests as cases.
    pub prompt: PromptFile,
}

/// Every column: prompts in order, each on every provider in order. The config is taken: its tests
/// become the last column's cases as they are (every other column's are copies), so a config of
/// 20,000 tests is not held twice while its columns are made.
pub fn columns(mut config: Config) -> Vec<Column> {
    let mut tests = std::mem::take(&mut config.tests);
    let count = config.prompts.len() * config.providers.len();
    let mut columns = Vec::with_capacity(count);
    for (p, prompt) in config.prompts.iter().enumerate() {
        for (q, provider) in config.providers.iter().enumerate() {
            let id = crate::names::file_name(&format!("p{}-{}", p + 1, short(provider, q)));
            let mut file = prompt_file(&id, prompt, provider);
            file.description = Some(format!("promptfoo prompt {:?} on {:?}", prompt.label, provider.label));
            // A test with a `providers` filter runs on the providers it names alone.
            let runs = |test: &&super::Test| test.runs_on(provider);
            let mut cases = Vec::with_capacity(tests.iter().filter(runs).count());
            if columns.len() + 1 == count {
                cases.extend(std::mem::take(&mut tests).into_iter().filter(|t| runs(&t)).map(into_case));
            } else {
                cases.extend(tests.iter().filter(runs).map(case_of));
            }
            file.cases = cases;
            columns.push(Column { label: format!("{} · {}", prompt.label, provider.label), prompt: file });
        }
    }
    columns
}

/// The part of a column's id after the prompt's number: the provider's model and number.
fn short(provider: &Provider, index: usize) -> String {
    let model: String =
        provider.model.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).take(40).collect();
    format!("{}-{model}-{}", provider.kind.name(), index + 1)
}

/// `prompt` on `provider`, as a prompt file (no cases yet).
fn prompt_file(id: &str, prompt: &Prompt, provider: &Provider) -> PromptFile {
    let mut file = PromptFile::new(id, prompt.template.clone());
    file.system.clone_from(&prompt.system);
    let (provider_schema, provider_json) = match &provider.response_format {
        Some(format) => match format.get("type").and_then(Value::as_str) {
            Some("json_schema") => (format.pointer("/json_schema/schema").cloned(), true),
            Some("json_object") => (None, true),
            _ => (None, false),
        },
        None => (None, false),
    };
    let schema = prompt.schema.clone().or(provider_schema);
    let json = prompt.json || provider_json;
    if json {
        file.response_type = ResponseType::Json;
        file.provider.structured = Some(if schema.is_some() { "json-schema" } else { "json-object" }.to_string());
    }
    file.schema = schema;
    // A cell passes or fails by its assertions, as in promptfoo; the schema is a request to the
    // provider, its result shown beside the verdict.
    file.eval.verdicts = Some(crate::prompt::expect::Verdicts::Promptfoo);
    if prompt.parsed || (prompt.schema.is_none() && provider.parsed_output) {
        file.eval.parsed_output = Some(true);
    }
    let settings = &mut file.provider;
    settings.name = Some(provider.kind.name().to_string());
    settings.model = Some(provider.model.clone());
    settings.base_url.clone_from(&provider.base_url);
    settings.key_env.clone_from(&provider.api_key_env);
    settings.key.clone_from(&provider.key);
    settings.temperature = provider.temperature;
    settings.max_tokens = provider.max_tokens;
    settings.stop.clone_from(&provider.stop);
    file
}

/// Every test as a case, whatever provider it runs on (`import promptfoo`'s dataset).
pub fn cases(config: &Config) -> Vec<Case> {
    config.tests.iter().map(case_of).collect()
}

/// A test as a case: its variables, its assertions as checks, its threshold as the pass score.
fn case_of(test: &super::Test) -> Case {
    Case {
        name: test.name.clone(),
        variables: test.vars.clone(),
        checks: test.asserts.iter().map(check_of).collect(),
        pass_score: test.threshold,
        ..Case::default()
    }
}

/// A test as a case, taken: [`case_of`] without copying its name and variables.
fn into_case(test: super::Test) -> Case {
    Case {
        checks: test.asserts.iter().map(check_of).collect(),
        name: test.name,
        variables: test.vars,
        pass_score: test.threshold,
        ..Case::default()
    }
}

/// An assertion as a check of kind `assert`, placed at its `file:line`.
pub fn check_of(assert: &Assert) -> CheckSpec {
    let mut check = CheckSpec::new(CheckKind::Assert);
    check.assert = Some(assert.kind.clone());
    check.value.clone_from(&assert.value);
    check.threshold = assert.threshold;
    check.weight = (assert.weight != 1.0).then_some(assert.weight);
    // An `llm-rubric` assertion's grader is its judge (none: the eval's `--judge`); a `similar`
    // assertion's embedder (none: the eval's `--embedder`). Each is called where its block says.
    check.judge = assert.grader.as_ref().map(|g| g.id.clone());
    check.embedder = assert.embedder.as_ref().map(|e| e.id.clone());
    if let Some(server) = assert.grader.as_ref().or(assert.embedder.as_ref()).map(|m| &m.server) {
        check.base_url.clone_from(&server.base_url);
        check.key_env.clone_from(&server.key_env);
        check.key.clone_from(&server.key);
    }
    check.transform = (!assert.transforms.is_empty()).then(|| assert.transforms.clone());
    check.at = At(place_of(&assert.at));
    check
}

/// `file:line` as a place.
fn place_of(at: &str) -> Option<Place> {
    let (path, line) = at.rsplit_once(':')?;
    Some(Place { path: path.into(), line: line.parse().ok()?, column: 1 })
}
