//! What an answer is read and checked with: a prompt's response type, profile and checks (its JSON
//! Schema, or a PtcRunner signature under PtcRunner's rules), split into the check of the whole answer
//! and the check of one item (what a truncation sweep counts). The CLI, the workbench, batches and
//! the run setup all resolve a prompt through here.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};

use crate::files;
use crate::output::{Profile, ResponseType};
use crate::prompt::file::PromptFile;
use crate::prompt::signature::json_mode::AnswerCheck;
use crate::prompt::signature::{self, SigType, Signature};
use crate::schema::{lint_schema_text, Check, CompiledSchema};

/// The parser settings the options resolve to.
#[derive(Clone)]
pub struct Setup {
    pub response_type: ResponseType,
    pub profile: Profile,
    /// What the answer is checked against: each line for jsonl, the whole value for json.
    pub check: Option<Arc<dyn Check>>,
    /// What one item is checked against in a truncation sweep: for jsonl the line check, for json the
    /// schema of one element of the array (or of PtcRunner's `{"items": [...]}` wrapper).
    pub item_check: Option<Arc<dyn Check>>,
}

type SharedCheck = Arc<dyn Check>;

/// The setup a prompt file in memory gives (its response type, profile and checks), as
/// `--prompt FILE` would; `origin` is where the prompt lives (its directory resolves `schema_file`;
/// errors name it). `profile` overrides the prompt's.
pub fn prompt_setup(prompt: &PromptFile, origin: &Path, profile: Option<Profile>) -> anyhow::Result<Setup> {
    setup_for_prompt(prompt, origin, origin.parent().unwrap_or(Path::new(".")), profile)
}

/// What an answer can be checked against, before it is split into answer and item checks.
pub(crate) enum Checks {
    None,
    Schema(Box<CompiledSchema>),
    Signature(Signature),
}

impl Checks {
    /// The answer check and the per-item check for `response_type` under `profile`.
    pub(crate) fn split(
        self,
        response_type: ResponseType,
        profile: Profile,
    ) -> (Option<SharedCheck>, Option<SharedCheck>) {
        match self {
            Checks::None => (None, None),
            Checks::Schema(schema) => {
                let schema: Arc<CompiledSchema> = Arc::from(schema);
                let item: Option<Arc<dyn Check>> = match response_type {
                    ResponseType::Json => {
                        schema.item_schema().and_then(Result::ok).map(|s| Arc::new(s) as Arc<dyn Check>)
                    }
                    _ => Some(schema.clone()),
                };
                (Some(schema), item)
            }
            Checks::Signature(sig) => {
                let item: Option<Arc<dyn Check>> = match (&sig.returns, response_type) {
                    (SigType::List(element), ResponseType::Json) => {
                        Some(Arc::new(Signature { params: Vec::new(), returns: (**element).clone() }))
                    }
                    (_, ResponseType::Json) => None,
                    _ => Some(Arc::new(sig.clone())),
                };
                // PtcRunner's JSON mode has answer rules of its own (the list wrapper, objects only).
                let check: Arc<dyn Check> = match (profile, response_type) {
                    (Profile::Ptc, ResponseType::Json) => Arc::new(AnswerCheck(sig)),
                    _ => Arc::new(sig),
                };
                (Some(check), item)
            }
        }
    }
}

/// The parser settings of a prompt held in memory (the workbench's edited prompt): its response type,
/// `profile` or the prompt's, and its checks. `path` names the prompt in errors; `base_dir` resolves
/// `schema_file`.
pub fn setup_for_prompt(
    prompt: &PromptFile,
    path: &Path,
    base_dir: &Path,
    profile: Option<Profile>,
) -> anyhow::Result<Setup> {
    let response_type = prompt.response_type;
    let profile = profile.or(prompt.profile).unwrap_or_default();
    let (check, item_check) = prompt_checks(prompt, path, base_dir)?.split(response_type, profile);
    Ok(Setup { response_type, profile, check, item_check })
}

/// The checks a prompt file describes: its signature (PtcRunner's rules) or its JSON Schema.
pub(crate) fn prompt_checks(prompt: &PromptFile, path: &Path, base: &Path) -> anyhow::Result<Checks> {
    if let Some(src) = &prompt.signature {
        return Ok(Checks::Signature(signature_check(src, &path.display().to_string())?));
    }
    let Some(schema) = prompt.resolve_schema(base)? else {
        return Ok(Checks::None);
    };
    let compiled =
        CompiledSchema::compile(&schema).with_context(|| format!("the schema of prompt {}", path.display()))?;
    Ok(Checks::Schema(Box::new(compiled)))
}

pub(crate) fn signature_check(src: &str, origin: &str) -> anyhow::Result<Signature> {
    signature::parse(src).map_err(|e| anyhow::anyhow!("{origin}: bad signature:\n{e}"))
}

/// Reads and compiles a JSON Schema file, naming the file and where it is wrong.
pub fn load_schema(path: &Path) -> anyhow::Result<CompiledSchema> {
    let text = read_text(path)?;
    lint_schema_text(&text).map_err(|issues| {
        let lines: Vec<String> = issues.iter().map(|i| format!("  {}: {i}", path.display())).collect();
        anyhow::anyhow!("schema {} is not usable:\n{}", path.display(), lines.join("\n"))
    })
}

/// Reads a file (or standard input for `-`) as UTF-8, naming the file and where bad bytes are.
pub fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = if path == Path::new("-") {
        files::read_from(std::io::stdin(), Path::new("standard input"), files::INPUT_TEXT, 0)?
    } else {
        files::read(path, files::INPUT_TEXT)?
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let good = &e.as_bytes()[..at];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let column = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
            let name = if path == Path::new("-") { "standard input".to_string() } else { path.display().to_string() };
            bail!("{name}:{line}:{column}: not UTF-8 (invalid byte 0x{:02x} at byte offset {at})", e.as_bytes()[at])
        }
    }
}
