//! A test's `assert` list and a CSV's `__expected` cells, read into [`Assert`]s
//! (promptfoo.dev/docs/configuration/expected-outputs: `type`, `value`, `threshold`, `weight`; the
//! string syntax `type:value`, `type(threshold):value`, `not-type:value`, plain text meaning
//! `equals`). The type is checked here; what it means is `eval::checks`' business.

use serde_json::Value;

use super::node::Node;
use super::{mapping, text_of, ModelRef, Place, PromptfooError};
use crate::prompt::expect::{AssertOp, AssertType, AssertWhat};

/// One assertion of a test.
#[derive(Clone, Debug, PartialEq)]
pub struct Assert {
    pub kind: AssertType,
    pub value: Option<Value>,
    pub threshold: Option<f64>,
    /// How heavily it counts in the test's score (default 1; 0: it always passes).
    pub weight: f64,
    /// An `llm-rubric` assertion's grader (its `provider`, else its test's `options.provider`):
    /// `openai:gpt-4o-mini`, a check's `judge`.
    pub grader: Option<ModelRef>,
    /// A `similar` assertion's embedding model (its `provider`, else its test's
    /// `options.provider.embedding`): `openai:text-embedding-3-small`, a check's `embedder`.
    pub embedder: Option<ModelRef>,
    /// Its transforms, in order: its test's `options.transform` (else defaultTest's), then its own
    /// `transform` (JavaScript, or `file://x.js`).
    pub transforms: Vec<String>,
    /// `file:line` of the assertion.
    pub at: String,
}

const KEYS: [&str; 8] = ["type", "value", "threshold", "weight", "metric", "provider", "rubricPrompt", "transform"];

/// The assertions of an `assert` list.
pub(super) fn read(place: &Place, node: &Node, warnings: &mut Vec<String>) -> Result<Vec<Assert>, PromptfooError> {
    let super::node::Tree::List(items) = &node.tree else {
        return Err(place.error(node.line, format!("`assert` is a list of assertions, not {}", node.kind())));
    };
    items.iter().map(|item| one(place, item, warnings)).collect()
}

fn one(place: &Place, node: &Node, warnings: &mut Vec<String>) -> Result<Assert, PromptfooError> {
    let entries = mapping(place, node, "an assertion", &KEYS)?;
    let type_node = entries.get("type").ok_or_else(|| place.error(node.line, "an assertion needs a `type`"))?;
    let kind = AssertType::parse(text_of(place, type_node, "type")?)
        .map_err(|message| place.error(type_node.line, message))?;
    let transforms = match entries.get("transform") {
        Some(transform) => vec![text_of(place, transform, "transform")?.to_string()],
        None => Vec::new(),
    };
    // A `similar` assertion's `provider` is the model that embeds; any other's grades.
    let similar = kind.to_string().ends_with("similar");
    let (grader, embedder) = match entries.get("provider") {
        Some(provider) if similar => (None, Some(embedder_of(place, provider)?)),
        Some(provider) => (Some(grader_of(place, provider)?), None),
        None => (None, None),
    };
    for key in ["metric", "rubricPrompt"] {
        if let Some(value) = entries.get(key) {
            warnings.push(format!("{}: the assertion's `{key}` is read past", place.at(value.line)));
        }
    }
    let number = |key: &str| -> Result<Option<f64>, PromptfooError> {
        match entries.get(key) {
            None => Ok(None),
            Some(n) => n
                .as_f64()
                .filter(|n| n.is_finite() && *n >= 0.0)
                .map(Some)
                .ok_or_else(|| place.error(n.line, format!("`{key}` is a number, 0 or more, not {}", n.to_json()))),
        }
    };
    let value = entries.get("value").map(|v| v.to_json());
    let code = matches!(&kind.what, AssertWhat::NotEvaluated(name) if name == "python" || name == "javascript");
    if let Some(Value::String(text)) = &value {
        // A `python` or `javascript` assertion's file is its code, run by `eval::grade`.
        if text.starts_with("file://") && !code {
            return Err(place.error(
                node.line,
                format!("an assertion's value from a file ({text:?}) is not read here; write the value inline"),
            ));
        }
    }
    Ok(Assert {
        kind,
        value,
        threshold: number("threshold")?,
        weight: number("weight")?.unwrap_or(1.0),
        grader,
        embedder,
        transforms,
        at: place.at(node.line),
    })
}

/// An embedding model as promptfoo names it (`openai:embedding:text-embedding-3-small`, `{id: ...}`,
/// or `{embedding: {id: ...}}` / `{embedding: ID}`), checked as an embedder tunebench can call.
pub(super) fn embedder_of(place: &Place, node: &Node) -> Result<ModelRef, PromptfooError> {
    let id = match node.entries() {
        Some(entries) => match entries.get("embedding") {
            Some(embedding) => match embedding.entries() {
                Some(inner) => inner.get("id").and_then(|id| id.as_text()).map(str::to_string),
                None => embedding.as_text().map(str::to_string),
            },
            None => entries.get("id").and_then(|id| id.as_text()).map(str::to_string),
        },
        None => node.as_text().map(str::to_string),
    };
    let id = id.ok_or_else(|| {
        place.error(node.line, "an embedding `provider` is an id such as openai:embedding:text-embedding-3-small")
    })?;
    crate::provider::embed::EmbedderModel::parse(&id).map_err(|why| place.error(node.line, why))?;
    // The block that names the model holds its `config` (`{embedding: {id, config}}` or `{id, config}`).
    let block = node.entries().and_then(|e| e.get("embedding").copied()).filter(|e| e.entries().is_some());
    let server = super::providers::server_of(place, block.unwrap_or(node))?;
    Ok(ModelRef { id, server })
}

/// A grader as promptfoo names it (`provider: openai:gpt-4o-mini`, or `{id: ...}`), checked as a judge's
/// model.
pub(super) fn grader_of(place: &Place, node: &Node) -> Result<ModelRef, PromptfooError> {
    let id = match node.entries() {
        Some(entries) => entries.get("id").and_then(|id| id.as_text()).map(str::to_string),
        None => node.as_text().map(str::to_string),
    };
    let id = id.ok_or_else(|| place.error(node.line, "a grader `provider` is an id such as openai:gpt-4o-mini"))?;
    let id = id.strip_prefix("openai:chat:").map(|m| format!("openai:{m}")).unwrap_or(id);
    let provider = id.split(':').next().unwrap_or_default();
    match crate::provider::kind::ProviderKind::parse(provider) {
        Some(kind) if kind != crate::provider::kind::ProviderKind::Replay => {
            Ok(ModelRef { id, server: super::providers::server_of(place, node)? })
        }
        _ => Err(place.error(
            node.line,
            format!("grader {id:?} is not a provider tunebench runs: {}", crate::provider::kind::ProviderKind::names()),
        )),
    }
}

/// An `__expected` cell (`contains:Paris`, `levenshtein(5):hello`, `not-regex:^x`, `is-json`, or plain
/// text meaning `equals`), as promptfoo's "Assertion string syntax" writes it; `at` is where the cell
/// is. `Err` is why it cannot be read.
pub fn parse_expected(text: &str, at: String) -> Result<Assert, String> {
    // promptfoo trims the whole cell (` Paris` is equals `Paris`).
    let text = text.trim();
    let plain = || Assert {
        kind: AssertType { negated: false, what: AssertWhat::Evaluated(AssertOp::Equals) },
        value: Some(Value::String(text.to_string())),
        threshold: None,
        weight: 1.0,
        grader: None,
        embedder: None,
        transforms: Vec::new(),
        at: at.clone(),
    };
    if text.starts_with("file://") {
        return Err(format!("{text:?} names a file of assertions, which is not read here"));
    }
    // promptfoo trims the value after the type (`icontains: notebook` looks for "notebook"), but
    // not a rubric's (`grade: Is polite` keeps its space).
    let (head, value) = match text.split_once(':') {
        Some((head, value)) => {
            let rubric = matches!(head.trim().trim_start_matches("not-"), "grade" | "llm-rubric");
            (head.trim(), Some(if rubric { value } else { value.trim() }))
        }
        None => (text, None),
    };
    let (name, threshold) = match head.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')').map(str::parse::<f64>) {
            Some(Ok(t)) if t.is_finite() && t >= 0.0 => (name, Some(t)),
            _ => return Ok(plain()),
        },
        None => (head, None),
    };
    let (negated, base) = match name.strip_prefix("not-") {
        Some(base) => ("not-", base),
        None => ("", name),
    };
    // `not-grade:x` is no type promptfoo knows: the cell is compared whole, as text.
    if negated == "not-" && base == "grade" {
        return Ok(plain());
    }
    let base = match base {
        "grade" => "llm-rubric",
        "fn" => "javascript",
        other => other,
    };
    let Ok(kind) = AssertType::parse(&format!("{negated}{base}")) else { return Ok(plain()) };
    if value.is_none() && kind.op().is_some_and(|op| op.needs_value()) {
        return Ok(plain());
    }
    let list = matches!(base, "contains-any" | "contains-all" | "icontains-any" | "icontains-all");
    let value = value.map(|v| {
        if list {
            Value::Array(crate::prompt::expect::assert::split_list(v).into_iter().map(Value::String).collect())
        } else {
            Value::String(v.to_string())
        }
    });
    // promptfoo gives these types a threshold of 0.75 when the cell writes none (so a CSV
    // `levenshtein:x` passes only at distance 0, where YAML's default is 5).
    let threshold = threshold
        .or_else(|| matches!(base, "starts-with" | "levenshtein" | "cost" | "latency" | "rouge-n").then_some(0.75));
    Ok(Assert { kind, value, threshold, weight: 1.0, grader: None, embedder: None, transforms: Vec::new(), at })
}
