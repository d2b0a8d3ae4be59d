//! The compare screen's effect: derive the twin of the open prompt, run both sides through
//! `compare::pair` (the replay provider plays each side's recorded answer from `answers/`; a live
//! provider runs both, one at a time for a server on this machine), compare them with
//! `Comparison::new` and send the events and the result back as `Msg::Compare`.

use std::path::{Path, PathBuf};

use crate::compare::flow::{self, Answers, Flow};
use crate::compare::{twin_of, twin_type, SideSpec};
use crate::output::ResponseType;
use crate::prompt::file::PromptFile;
use crate::prompt::reading::setup_for_prompt;
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::run::{ProviderChoice, Reading, SetupOptions};
use crate::tui::jobs::{Bridge, Job};
use crate::tui::msg::{CompareNews, CompareRequest, Msg};
use crate::tui::sample::transcript_for;

/// Starts the comparison on the job bridge; an error says why it cannot start.
pub fn start(bridge: Bridge, request: CompareRequest) -> Result<(), String> {
    let base_dir = request.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let specs = sides(&request, &base_dir)?;
    let cases = [request.case.clone()];
    let replay = if request.target.provider == Some(ProviderKind::Replay) {
        Some(recorded_answers(&specs, &request.path, &request.prompt.id)?)
    } else {
        None
    };
    let settings = flow::settings(
        &request.prompt,
        &SetupOptions { target: request.target.clone(), ..SetupOptions::default() },
        replay.is_some(),
    )
    .map_err(|e| format!("{e:#}"))?;
    let (concurrency, _) = flow::concurrency(&settings, None);
    let answers = match replay {
        Some(paths) => Answers::Recorded(paths),
        None => Answers::Live(ProviderChoice::new(&settings, None, bridge.pace)),
    };
    bridge.log.line(&format!(
        "compare {} ({} vs {}) on {}, {concurrency} at a time",
        request.path.display(),
        specs[0].prompt.id,
        specs[1].prompt.id,
        settings.provider
    ));
    let (tx, id, record_history) = (bridge.tx.clone(), request.id, bridge.record_history);
    // The batch's future is not `Send` (a closure lifetime in `run_batch`), so it runs on a
    // blocking thread of the runtime; cancelling it (esc, or a new comparison) stops it.
    bridge.jobs.spawn_blocking(Job::Compare, move |handle, stopped| {
        handle.block_on(async move {
            let events = tx.clone();
            let variables = Variables::new();
            let flow = Flow {
                sides: [&specs[0], &specs[1]],
                settings: &settings,
                cases: &cases,
                variables: &variables,
                answers,
                concurrency,
                batch: false,
                record_history,
                key: None,
            };
            let compared = flow::compare(flow, move |at, event| {
                let news = CompareNews::Event { side: at.side, event: Box::new(event) };
                let _ = events.send(Msg::Compare { id, news });
            });
            let compared = tokio::select! {
                compared = compared => compared,
                _ = stopped.wait() => return,
            };
            let done = match compared {
                Ok(mut compared) => {
                    for warning in compared.warnings {
                        let _ = tx.send(Msg::Note(warning));
                    }
                    compared.comparisons.pop().map(Box::new).ok_or_else(|| "no run took place".to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = tx.send(Msg::Compare { id, news: CompareNews::Done(done) });
        })
    });
    Ok(())
}

/// The json side and the jsonl side: the prompt and its derived twin, in that order.
pub fn sides(request: &CompareRequest, base_dir: &Path) -> Result<[SideSpec; 2], String> {
    let prompt = &request.prompt;
    let Some(other) = twin_type(prompt.response_type) else {
        return Err(format!(
            "prompt `{}` answers text: only a json or jsonl prompt has a twin to compare with",
            prompt.id
        ));
    };
    let twin = twin_of(prompt, base_dir, other).map_err(|e| e.to_string())?;
    let own = spec(prompt.clone(), &request.path, base_dir)?;
    let derived = spec(twin.prompt, &request.path, base_dir)?;
    Ok(if prompt.response_type == ResponseType::Json { [own, derived] } else { [derived, own] })
}

fn spec(prompt: PromptFile, path: &Path, base_dir: &Path) -> Result<SideSpec, String> {
    let setup = setup_for_prompt(&prompt, path, base_dir, None).map_err(|e| format!("{e:#}"))?;
    Ok(SideSpec {
        label: crate::tui::compare::state::LABELS[usize::from(setup.response_type == ResponseType::Jsonl)].to_string(),
        path: path.to_path_buf(),
        base_dir: base_dir.to_path_buf(),
        reading: Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check },
        item_check: setup.item_check,
        prompt,
    })
}

/// Each side's recorded answer for the replay provider: `answers/<prompt id>.jsonl` beside the
/// prompt file (the open prompt's own file stem for its side), or a message naming what is missing.
pub fn recorded_answers(specs: &[SideSpec; 2], path: &Path, own_id: &str) -> Result<[PathBuf; 2], String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let find = |spec: &SideSpec| {
        let own = transcript_for(path).filter(|_| spec.prompt.id == own_id);
        own.or_else(|| transcript_for(&crate::names::inside(dir, &spec.prompt.id, ".toml"))).ok_or_else(|| {
            format!(
                "no recorded answer for the {} side (`{}`): the replay provider needs {} — alt-p picks a live provider",
                spec.label,
                spec.prompt.id,
                crate::names::inside(&dir.join("answers"), &spec.prompt.id, ".jsonl").display()
            )
        })
    };
    Ok([find(&specs[0])?, find(&specs[1])?])
}
