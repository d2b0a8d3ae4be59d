//! What ctrl-r sends, built by one path for the run and for its preview: the [`RunRequest`] of the
//! prompt as edited under the workbench's choices, its settings, plan and provider as the runner makes
//! them, and the provider's first HTTP request from that same plan (alt-v shows it, alt-y copies it
//! as curl).

use std::sync::Arc;

use crate::prompt::file::PromptFile;
use crate::provider::kind::ProviderKind;
use crate::provider::replay::Pace;
use crate::provider::{ModeReport, Outgoing, Provider, Request};
use crate::run::{ReplayFrom, RunPlan, RunSetup, SetupOptions};
use crate::tui::edit;
use crate::tui::msg::RunRequest;
use crate::tui::state::State;

pub use crate::tui::state::Env;

/// The run of the prompt as edited under the workbench's choices (`max_turns` `Some(1)`: one turn;
/// `replay`: a recorded answer), numbered `state.workbench.run_id`; `Err` says why it cannot start.
pub fn run_request(state: &State, max_turns: Option<u32>, replay: Option<ReplayFrom>) -> Result<RunRequest, String> {
    request_of(state, edit::prompt_for_run(state)?, max_turns, replay)
}

/// [`run_request`] of `prompt` (the token count's job makes the prompt as edited itself).
pub fn request_of(
    state: &State,
    prompt: PromptFile,
    max_turns: Option<u32>,
    replay: Option<ReplayFrom>,
) -> Result<RunRequest, String> {
    // The replay chosen plays the prompt's recorded answer (at the runner's pace: it sets it).
    let replay = replay.or_else(|| {
        let chosen = (state.choice.provider == ProviderKind::Replay).then(|| state.choice.transcript.clone());
        chosen.flatten().map(|path| ReplayFrom::File(path, Pace::Recorded))
    });
    let mut target = state.choice.target();
    if replay.is_some() {
        target.provider = Some(ProviderKind::Replay);
    } else if target.provider == Some(ProviderKind::Replay) {
        return Err("the replay provider needs a recorded transcript and this prompt has none in answers/; \
                    alt-p picks another provider"
            .into());
    }
    target.replay = replay;
    Ok(RunRequest {
        run: state.workbench.run_id,
        prompt,
        path: state.path.clone(),
        case: state.choice.case.clone(),
        target,
        max_turns,
    })
}

/// The run setup of `request`: the workbench's choices over the prompt's `[provider]`, as
/// `tunebench run` lays its flags over it (a replayed file at `pace`).
pub fn setup(request: &RunRequest, pace: Pace) -> anyhow::Result<RunSetup> {
    RunSetup::new(request.prompt.clone(), &request.path, options(request, pace))
}

fn options(request: &RunRequest, pace: Pace) -> SetupOptions {
    SetupOptions {
        target: request.target.clone().at_pace(pace),
        max_turns: request.max_turns,
        ..SetupOptions::default()
    }
}

/// What a run of `request` runs: its plan and the provider that answers it (a replay's model, when
/// none was chosen, is its transcript's). `pace` is a replayed file's; `env` reads the providers'
/// variables.
pub fn prepare(request: &RunRequest, pace: Pace, env: Env) -> anyhow::Result<(RunPlan, Arc<dyn Provider>)> {
    let setup = setup(request, pace)?;
    let provider = setup.provider_with(None, &env)?;
    let mut plan = setup.plan(request.case.as_deref())?;
    // The truncation chart is fed by the run's own sweep, its item check compiled once with the setup.
    plan.live_sweep = Some(crate::run::LiveSweep { item_check: setup.item_check.clone() });
    Ok((plan, provider))
}

/// The first request a run of the prompt as edited sends.
#[derive(Clone, Debug, PartialEq)]
pub enum Sent {
    /// An HTTP provider's request, exactly as its stream sends it, and the structured mode (the
    /// plan's steps and the provider's) it asks for.
    Http { outgoing: Outgoing, mode: ModeReport },
    /// A provider with no HTTP request (`local`, `replay`) is handed the plan's request.
    InProcess { provider: ProviderKind, request: Request, mode: ModeReport },
}

/// The plan ctrl-r would run now and its setup, made without the answers' checks (no schema
/// compiled; the request is the same): what the preview and the token count show.
pub fn preview_plan(state: &State) -> Result<(RunSetup, RunPlan), String> {
    // A replay sends no HTTP request: the recorded answer is not read for the preview.
    let mut request = run_request(state, None, None)?;
    request.target.replay = None;
    preview_plan_of(&request)
}

/// [`preview_plan`] of a request taken off the state (the token count makes it in the background).
pub fn preview_plan_of(request: &RunRequest) -> Result<(RunSetup, RunPlan), String> {
    let setup = RunSetup::unchecked(request.prompt.clone(), &request.path, options(request, Pace::Instant))
        .map_err(|e| format!("{e:#}"))?;
    let plan = setup.plan(request.case.as_deref()).map_err(|e| format!("{e:#}"))?;
    Ok((setup, plan))
}

/// What ctrl-r would send now: the request of the plan the runner would make, as the provider it
/// would build sends it first (before any fallback the server's answer causes).
pub fn sent(state: &State) -> Result<Sent, String> {
    // The pane is redrawn every frame, so the plan is made without the answers' checks.
    let (setup, plan) = preview_plan(state)?;
    let env = state.env;
    match setup.choice().first_request(&plan.request, &env).map_err(|e| e.to_string())? {
        Some((outgoing, mode)) => Ok(Sent::Http { outgoing, mode: plan.mode_with(Some(&mode)) }),
        None => {
            Ok(Sent::InProcess { provider: setup.settings.provider, mode: plan.mode.clone(), request: plan.request })
        }
    }
}

/// A curl command that sends what ctrl-r would send, the key read from its variable.
pub fn curl(state: &State) -> Result<String, String> {
    match sent(state)? {
        Sent::Http { outgoing, .. } => Ok(outgoing.curl()),
        Sent::InProcess { provider, .. } => Err(format!(
            "the {provider} provider sends no HTTP request, so there is no curl command: \
             alt-p picks openai, vllm, ollama or anthropic"
        )),
    }
}
