//! The status line's token count of the request ctrl-r would send (pure, part of `update`): the
//! request of the same plan the run makes (the schema instructions it adds included), counted against
//! the context window and max tokens. Nothing is done per frame: after each message a cheap key
//! (edits, run choices, tokenizer) says whether anything could have changed; if so the request is
//! rendered and hashed, and counted only when its text (or the tokenizer) changed. The local model's
//! own tokenizer is read once in the background (`Effect::LoadTokenizer`); until it arrives, and for
//! servers, o200k estimates.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::msg::Effect;
use super::state::{Choice, State};
use crate::provider::kind::ProviderKind;
use crate::run::prompt_tokens::{limits, LocalTokenizer, PromptSize, Tokenizer};

/// What the status line shows of the request's size, and what it was made from.
#[derive(Clone, Debug, Default)]
pub struct TokenView {
    /// The inputs of the last look (a new look only when they change).
    inputs: Option<Inputs>,
    /// The hash of the request text and tokenizer last counted, and its count.
    counted: Option<(u64, usize)>,
    /// The size shown, or why the request does not render.
    pub shown: Option<Result<PromptSize, String>>,
    /// The local tokenizer read for the model the choice names (empty: the default), or why not.
    pub local: Option<(String, Result<Arc<LocalTokenizer>, String>)>,
    /// A local tokenizer asked for and not back yet (for this model).
    pub loading: Option<String>,
    /// Times the request was counted (a bench figure: once per change, never per frame).
    pub counts: usize,
}

/// What the count depends on, cheap to compare.
#[derive(Clone, Debug, PartialEq)]
struct Inputs {
    edits: u64,
    choice: Choice,
    local: Option<(String, bool)>,
}

/// After a message: looks again when the edits, the run choices or the tokenizer changed; asks for
/// the local model's tokenizer when the provider is local and it is not read yet.
pub fn refresh(state: &mut State) -> Vec<Effect> {
    let view = &state.tokens;
    let local = view.local.as_ref().map(|(model, read)| (model.as_str(), read.is_ok()));
    // Compared in place: run events arrive by the thousand a second and must cost nothing here.
    let same = view.inputs.as_ref().is_some_and(|seen| {
        seen.edits == state.edits
            && seen.choice == state.choice
            && seen.local.as_ref().map(|(model, ok)| (model.as_str(), *ok)) == local
    });
    if same {
        return Vec::new();
    }
    let local = local.map(|(model, ok)| (model.to_string(), ok));
    state.tokens.inputs = Some(Inputs { edits: state.edits, choice: state.choice.clone(), local });
    let mut effects = Vec::new();
    let local = state.choice.provider == ProviderKind::Local.name();
    let model = state.choice.model.clone().unwrap_or_default();
    let read = state.tokens.local.as_ref().filter(|(m, _)| *m == model).map(|(_, read)| read.clone());
    if local && read.is_none() && state.tokens.loading.as_deref() != Some(model.as_str()) {
        state.tokens.loading = Some(model.clone());
        effects.push(Effect::LoadTokenizer { model });
    }
    if state.choice.provider == ProviderKind::Replay.name() && state.choice.transcript.is_none() {
        // Nothing can be sent: no recorded answer to play (the preview says so).
        state.tokens.shown = None;
        return effects;
    }
    let tokenizer = match read {
        Some(Ok(tokenizer)) if local => Tokenizer::Local(tokenizer),
        _ => Tokenizer::O200k,
    };
    state.tokens.shown = Some(size(state, &tokenizer));
    effects
}

/// The request's size under `tokenizer`: counted again only when its text changed.
fn size(state: &mut State, tokenizer: &Tokenizer) -> Result<PromptSize, String> {
    let (setup, plan) = super::request::preview_plan(state)?;
    let mut hasher = std::hash::DefaultHasher::new();
    tokenizer.id().hash(&mut hasher);
    for message in &plan.request.messages {
        message.role.as_str().hash(&mut hasher);
        message.content.hash(&mut hasher);
    }
    let hash = hasher.finish();
    let tokens = match state.tokens.counted {
        Some((counted, tokens)) if counted == hash => tokens,
        _ => {
            let tokens = tokenizer.count(&plan.request)?;
            state.tokens.counts += 1;
            state.tokens.counted = Some((hash, tokens));
            tokens
        }
    };
    let (max_tokens, context) = limits(&plan, setup.settings.provider, tokenizer);
    Ok(PromptSize { tokens, exact: tokenizer.exact(), max_tokens, context })
}

/// The local tokenizer is back (or why not): kept for its model, and the count looks again.
pub fn loaded(state: &mut State, model: String, tokenizer: Result<Arc<LocalTokenizer>, String>) {
    if state.tokens.loading.as_deref() == Some(model.as_str()) {
        state.tokens.loading = None;
    }
    state.tokens.local = Some((model, tokenizer));
}

/// The status line's text: `prompt 412 + 1024 max / 4096 ctx` (`≈` before an o200k estimate, `>`
/// when prompt and answer exceed the window), and whether to warn.
pub fn status_text(view: &TokenView) -> Option<(String, bool)> {
    match view.shown.as_ref()? {
        Ok(size) => {
            let about = if size.exact { "" } else { "≈" };
            let max = size.max_tokens.map_or(String::new(), |n| format!(" + {n} max"));
            let over = size.over();
            let sign = if over { ">" } else { "/" };
            Some((format!("prompt {about}{}{max} {sign} {} ctx", size.tokens, size.context), over))
        }
        Err(_) => Some(("prompt: does not render".into(), true)),
    }
}
