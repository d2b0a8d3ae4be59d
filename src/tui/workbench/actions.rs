//! Actions: quit, save, run and cancel, focus, zoom and toggles, the run settings (provider,
//! structured mode, model, case, max tokens), and the moves handed to the navigation.

use crate::provider::StructuredMode;
use crate::tui::edit;
use crate::tui::msg::{Action, Effect, Job};
use crate::tui::state::{Overlay, State};
use crate::tui::workbench::cases;
use crate::tui::workbench::navigate::{cut_by, open, step};
use crate::tui::workbench::provider::choose_provider;
use crate::tui::workbench::run::start_run;
use crate::tui::workbench::state::Pane;
use crate::tui::workbench::state::RunPhase;

/// The providers `next-provider` cycles through.
pub const PROVIDERS: [crate::provider::kind::ProviderKind; 6] = crate::provider::kind::ProviderKind::ALL;

/// `None`: the provider's default (constrained on the local model, none on a server).
const STRUCTURED: [Option<StructuredMode>; 5] = [
    None,
    Some(StructuredMode::None),
    Some(StructuredMode::JsonObject),
    Some(StructuredMode::JsonSchema),
    Some(StructuredMode::Constrained),
];

/// Applies one action.
pub fn act(state: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => {
            if state.dirty {
                state.overlay = Overlay::ConfirmQuit;
                Vec::new()
            } else {
                state.quit = true;
                vec![Effect::Quit]
            }
        }
        Action::Save => edit::save(state),
        Action::Run => start_run(state, None, None),
        Action::RunOneTurn => start_run(state, Some(1), None),
        Action::CancelRun => {
            if state.overlay != Overlay::None {
                state.overlay = Overlay::None;
                return Vec::new();
            }
            if state.workbench.running() {
                state.workbench.phase = RunPhase::Cancelling;
                return vec![Effect::Cancel(Job::Run)];
            }
            Vec::new()
        }
        Action::FocusNext | Action::FocusPrev => {
            let at = Pane::ALL.iter().position(|p| *p == state.workbench.focus).unwrap_or(0);
            let n = Pane::ALL.len();
            let next = if action == Action::FocusNext { (at + 1) % n } else { (at + n - 1) % n };
            state.workbench.focus = Pane::ALL[next];
            Vec::new()
        }
        Action::FocusSystem => focus(state, Pane::System),
        Action::FocusTemplate => focus(state, Pane::Template),
        Action::FocusSchema => focus(state, Pane::Schema),
        Action::FocusVariables => focus(state, Pane::Variables),
        Action::FocusOutput => focus(state, Pane::Output),
        Action::FocusLines => focus(state, Pane::Lines),
        Action::FocusTruncation => focus(state, Pane::Truncation),
        Action::FocusHistory => focus(state, Pane::History),
        Action::ToggleZoom => {
            state.workbench.zoom = !state.workbench.zoom;
            Vec::new()
        }
        Action::ToggleHelp => {
            state.overlay = if state.overlay == Overlay::Help { Overlay::None } else { Overlay::Help };
            state.help_scroll = 0;
            Vec::new()
        }
        Action::ToggleTokens => {
            state.workbench.show_tokens = !state.workbench.show_tokens;
            Vec::new()
        }
        Action::ToggleProbs => {
            state.workbench.show_probs = !state.workbench.show_probs;
            if state.workbench.show_probs
                && !state.workbench.run.chunk_probs.iter().any(Option::is_some)
                && !state.workbench.run.output.is_empty()
            {
                state.note = Some("this answer has no token probabilities (local model: always; servers: --logprobs, or logprobs = true in [provider])".into());
            }
            Vec::new()
        }
        Action::TogglePreview => {
            state.workbench.preview = !state.workbench.preview;
            if state.workbench.preview {
                state.workbench.focus = Pane::System;
            }
            Vec::new()
        }
        Action::CopyCurl => match crate::tui::workbench::request::curl(state) {
            Ok(text) => vec![Effect::Copy { text, file_name: "last-request.curl.sh".into() }],
            Err(e) => {
                state.note = Some(e);
                Vec::new()
            }
        },
        Action::NextProvider => {
            let at = PROVIDERS.iter().position(|p| *p == state.choice.provider).map_or(0, |i| i + 1);
            choose_provider(state, PROVIDERS[at % PROVIDERS.len()]);
            Vec::new()
        }
        Action::NextStructured => {
            let at = STRUCTURED.iter().position(|s| *s == state.choice.structured).map_or(0, |i| i + 1);
            state.choice.structured = STRUCTURED[at % STRUCTURED.len()];
            state.note = Some(match &state.choice.structured {
                Some(mode) => format!("structured: {mode}"),
                None => format!(
                    "structured: the provider's default ({})",
                    state.choice.asked_mode(state.saved.response_type).0
                ),
            });
            crate::tui::workbench::lint::relint(state);
            Vec::new()
        }
        Action::ChooseModel => crate::tui::input::open_model_picker(state),
        Action::NextCase => {
            let names: Vec<Option<String>> =
                std::iter::once(None).chain(state.cases.iter().map(|c| Some(c.name.clone()))).collect();
            let at = names.iter().position(|n| *n == state.choice.case).map_or(0, |i| i + 1);
            state.choice.case = names[at % names.len()].clone();
            state.workbench.selected_variable = at % names.len();
            state.note = Some(format!("case: {}", state.choice.case.as_deref().unwrap_or("(default variables)")));
            crate::tui::workbench::fetch::warm_choice(state)
        }
        Action::MoreTokens => {
            state.choice.max_tokens = Some(state.choice.max_tokens.map_or(256, |n| n.saturating_mul(2)));
            Vec::new()
        }
        Action::FewerTokens => {
            state.choice.max_tokens = state.choice.max_tokens.map(|n| n / 2).filter(|n| *n >= 16);
            Vec::new()
        }
        Action::Up => step(state, -1),
        Action::Down => step(state, 1),
        Action::Left => cut_by(state, -1),
        Action::Right => cut_by(state, 1),
        Action::PageUp => step(state, -10),
        Action::PageDown => step(state, 10),
        Action::Home => step(state, i64::MIN / 2),
        Action::End => {
            if state.workbench.focus == Pane::Output {
                state.workbench.output_scroll = None;
                return Vec::new();
            }
            step(state, i64::MAX / 2)
        }
        Action::Open => open(state),
        Action::FilterCases => crate::tui::input::open_case_filter(state),
        Action::AddCase => cases::open_new(state),
        Action::CopyCase => cases::open_copy(state),
        Action::DeleteCase => cases::ask_delete(state),
        Action::UndoCaseEdit => {
            if state.workbench.focus != Pane::Variables {
                state.note = Some("undoing a case or variable change works in the variables pane (alt-4)".into());
                return Vec::new();
            }
            cases::undo(state)
        }
        // The router takes these: each opens another screen or works on the eval list.
        Action::Compare | Action::Eval | Action::MarkEval | Action::UndoAccept => Vec::new(),
        Action::Optimize | Action::AcceptCandidate | Action::RejectCandidate => {
            state.note = Some("optimize from the eval screen (alt-e, then o)".into());
            Vec::new()
        }
        Action::Approve | Action::Review | Action::EvalDiff | Action::AnswerTruncation | Action::FilterVerdicts => {
            state.note = Some("approve and review work on the eval screen (alt-e)".into());
            Vec::new()
        }
    }
}

pub(crate) fn focus(state: &mut State, pane: Pane) -> Vec<Effect> {
    state.workbench.focus = pane;
    Vec::new()
}
