//! The status line's token count of the request ctrl-r would send: the request of the same plan the
//! run makes (the schema instructions it adds included), counted against the context window and max
//! tokens. Nothing is done per frame: after each message a cheap key (edits, run choices, tokenizer)
//! says whether anything could have changed; if so the request is rendered and hashed, and counted
//! only when its text (or the tokenizer) changed. Small texts are counted at once; large ones
//! (`State::heavy`) in the background (`Effect::CountTokens`, back as `Msg::TokensCounted`, dropped
//! when a newer count was asked for), an edit's once typing settles (`Msg::Settled`), not per key.
//! The local model's own tokenizer is read once in the background (`Effect::LoadTokenizer`); until
//! it arrives, and for servers, o200k estimates.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::provider::kind::ProviderKind;
use crate::run::prompt_tokens::{limits, LocalTokenizer, PromptSize, Tokenizer};
use crate::tui::edit::Edits;
use crate::tui::msg::{Effect, RunRequest};
use crate::tui::state::{SchemaKind, State};
use crate::tui::workbench::state::TokenInputs;

pub use crate::tui::msg::{CountRequest, Counted};
pub use crate::tui::workbench::state::TokenView;

/// After a message: looks again when the edits, the run choices or the tokenizer changed; asks for
/// the local model's tokenizer when the provider is local and it is not read yet.
pub fn refresh(state: &mut State) -> Vec<Effect> {
    let view = &state.workbench.tokens;
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
    // Only the editors changed since the last look (a first look asks at once).
    let edits_only = view.inputs.as_ref().is_some_and(|seen| {
        seen.edits != state.edits
            && seen.choice == state.choice
            && seen.local.as_ref().map(|(model, ok)| (model.as_str(), *ok)) == local
    });
    let local = local.map(|(model, ok)| (model.to_string(), ok));
    state.workbench.tokens.inputs = Some(TokenInputs { edits: state.edits, choice: state.choice.clone(), local });
    let mut effects = Vec::new();
    let local = state.choice.provider == ProviderKind::Local;
    let model = state.choice.model.clone().unwrap_or_default();
    let read = state.workbench.tokens.local.as_ref().filter(|(m, _)| *m == model).map(|(_, read)| read.clone());
    if local && read.is_none() && state.workbench.tokens.loading.as_deref() != Some(model.as_str()) {
        state.workbench.tokens.loading = Some(model.clone());
        effects.push(Effect::LoadTokenizer { model });
    }
    if state.choice.provider == ProviderKind::Replay && state.choice.transcript.is_none() {
        // Nothing can be sent: no recorded answer to play (the preview says so); a count on its way
        // is of no use.
        state.workbench.tokens.shown = None;
        state.workbench.tokens.waiting = false;
        state.workbench.tokens.asked += 1;
        return effects;
    }
    let heavy = state.heavy();
    if edits_only && heavy {
        // Typing into large texts: counted once it settles, not per key.
        state.workbench.tokens.waiting = true;
        return effects;
    }
    effects.extend(count(state, heavy));
    effects
}

/// Typing settled: the count the edits are waiting for is asked for.
pub fn settled(state: &mut State) -> Vec<Effect> {
    if !std::mem::take(&mut state.workbench.tokens.waiting) {
        return Vec::new();
    }
    let heavy = state.heavy();
    count(state, heavy).into_iter().collect()
}

/// Counts the request now, or for large texts (`heavy`) asks for the count in the background.
fn count(state: &mut State, heavy: bool) -> Option<Effect> {
    let request = ask(state);
    if heavy {
        return Some(Effect::CountTokens(Box::new(request)));
    }
    let asked = request.asked;
    counted(state, asked, request.count());
    None
}

/// A count of the request as the editors and choices hold it now, numbered as the newest.
fn ask(state: &mut State) -> CountRequest {
    state.workbench.tokens.waiting = false;
    state.workbench.tokens.asked += 1;
    let local = state.choice.provider == ProviderKind::Local;
    let model = state.choice.model.clone().unwrap_or_default();
    let read = state.workbench.tokens.local.as_ref().filter(|(m, _)| *m == model).map(|(_, read)| read.clone());
    let tokenizer = match read {
        Some(Ok(tokenizer)) if local => Tokenizer::Local(tokenizer),
        _ => Tokenizer::O200k,
    };
    // The prompt is made in the job: the saved one (without its schema, which the schema editor's
    // text replaces, nor its cases, of which the count needs the chosen one: copying a large schema
    // or a dataset's rows is what a key must not wait for) and the edits to lay over it.
    let edits = Edits::of_chosen(state);
    let schema = if edits.schema_kind == SchemaKind::Signature { None } else { state.saved.schema.take() };
    let cases = std::mem::take(&mut state.saved.cases);
    let saved = state.saved.clone();
    state.saved.schema = schema;
    state.saved.cases = cases;
    // A replay sends no HTTP request: the recorded answer is not read for the count.
    let request = crate::tui::workbench::request::request_of(state, saved, None, None).map(|mut r| {
        r.target.replay = None;
        r
    });
    let asked = state.workbench.tokens.asked;
    CountRequest { asked, request, edits, tokenizer, counted: state.workbench.tokens.counted }
}

impl CountRequest {
    /// The request's size (off the loop: rendering and counting a large prompt takes a while).
    pub fn count(self) -> Counted {
        let made = self.request.and_then(|request| {
            let (prompt, _) = self.edits.apply(request.prompt)?;
            Ok(RunRequest { prompt, ..request })
        });
        let request = match made {
            Ok(request) => request,
            Err(why) => return Counted { shown: Err(why), counted: self.counted, anew: false },
        };
        let (setup, plan) = match crate::tui::workbench::request::preview_plan_of(&request) {
            Ok(planned) => planned,
            Err(why) => return Counted { shown: Err(why), counted: self.counted, anew: false },
        };
        let mut hasher = std::hash::DefaultHasher::new();
        self.tokenizer.id().hash(&mut hasher);
        for message in &plan.request.messages {
            message.role.as_str().hash(&mut hasher);
            message.content.hash(&mut hasher);
        }
        let hash = hasher.finish();
        let (tokens, anew) = match self.counted {
            Some((counted, tokens)) if counted == hash => (tokens, false),
            _ => match self.tokenizer.count(&plan.request) {
                Ok(tokens) => (tokens, true),
                Err(why) => return Counted { shown: Err(why), counted: self.counted, anew: false },
            },
        };
        let (max_tokens, context) = limits(&plan, setup.settings.provider, &self.tokenizer);
        let shown = Ok(PromptSize { tokens, exact: self.tokenizer.exact(), max_tokens, context });
        Counted { shown, counted: Some((hash, tokens)), anew }
    }
}

/// A count is back: shown unless a newer one was asked for since (then it is dropped).
pub fn counted(state: &mut State, asked: u64, counted: Counted) {
    if asked != state.workbench.tokens.asked {
        return;
    }
    if counted.anew {
        state.workbench.tokens.counts += 1;
    }
    state.workbench.tokens.counted = counted.counted;
    state.workbench.tokens.shown = Some(counted.shown);
    state.workbench.tokens.shown_for = asked;
}

/// The local tokenizer is back (or why not): kept for its model, and the count looks again.
pub fn loaded(state: &mut State, model: String, tokenizer: Result<Arc<LocalTokenizer>, String>) {
    if state.workbench.tokens.loading.as_deref() == Some(model.as_str()) {
        state.workbench.tokens.loading = None;
    }
    state.workbench.tokens.local = Some((model, tokenizer));
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
