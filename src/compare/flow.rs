//! The one comparison flow both front ends call (`tunebench compare` and the workbench's compare
//! screen): both sides planned with the same settings and variables, run as paired jobs (live, or
//! each side's recorded answer replayed with its recorded timings), the live runs added to the
//! history, and each case compared.

use std::path::PathBuf;

use super::pair::{self, At};
use super::{Comparison, SideSpec};
use crate::prompt::template::Variables;
use crate::provider::kind::ProviderKind;
use crate::run::job::{self, History};
use crate::run::{setup, ProviderChoice, RunError, RunEvent, RunSettings, SetupOptions, Target};

/// Where the answers come from.
#[derive(Clone, Debug)]
pub enum Answers {
    /// Both sides run on the provider this choice builds (one provider shared).
    Live(ProviderChoice),
    /// Each side's recorded transcript (in a batch, each case's file beside it), replayed.
    Recorded([PathBuf; 2]),
}

/// One comparison to make.
pub struct Flow<'a> {
    pub sides: [&'a SideSpec; 2],
    /// Both sides' settings (side A's prompt's `[provider]` under the front end's options).
    pub settings: &'a RunSettings,
    /// The cases (`None`: the prompt's own variables); several make a batch.
    pub cases: &'a [Option<String>],
    pub variables: &'a Variables,
    pub answers: Answers,
    /// Runs at once: 1 runs the sides one after the other.
    pub concurrency: usize,
    /// The cases are a batch (`--all-cases`): recorded answers are looked up per case.
    pub batch: bool,
    /// Live runs are appended to the history.
    pub record_history: bool,
    /// The field items are matched on (`None`: found from the schema).
    pub key: Option<&'a str>,
}

/// The comparisons, one per case, and what went wrong on the side (a history that was not written).
pub struct Compared {
    pub comparisons: Vec<Comparison>,
    pub warnings: Vec<String>,
}

/// The settings both sides of a comparison run with, for every front end: the command line's flags
/// (or the workbench's choice) over the first side's `[provider]`, as a run resolves them. Replaying
/// recorded answers, the provider is the replay and no model is claimed: each side's record names the
/// model its transcript recorded.
pub fn settings(
    prompt: &crate::prompt::file::PromptFile,
    options: &SetupOptions,
    replaying: bool,
) -> anyhow::Result<RunSettings> {
    if !replaying {
        return setup::settings(prompt, options);
    }
    // Resolved as a replay from the start, so no default of another provider (the local model's
    // constrained mode) is claimed for answers it did not give.
    let target = Target { provider: Some(ProviderKind::Replay), replay: None, ..options.target.clone() };
    let mut settings = setup::settings(prompt, &SetupOptions { target, ..options.clone() })?;
    settings.model.clear();
    Ok(settings)
}

/// How many runs go at once, and why: `asked`, else the provider's own pairing (a server on this
/// machine one run at a time, so both sides' timings are its alone).
pub fn concurrency(settings: &RunSettings, asked: Option<usize>) -> (usize, &'static str) {
    match asked {
        Some(asked) => (asked.max(1), "--concurrency"),
        None => {
            let pairing = pair::pairing(settings);
            (pairing.runs.max(1), pairing.reason)
        }
    }
}

/// Makes the comparison; `sink` gets every run's events with where they come from. Dropping the
/// future cancels every run.
pub async fn compare<F: FnMut(At, RunEvent) + Send>(flow: Flow<'_>, sink: F) -> Result<Compared, RunError> {
    let plans = pair::plans(flow.sides, flow.cases, flow.variables, flow.settings)?;
    let jobs = match &flow.answers {
        Answers::Live(choice) => pair::live_jobs(plans, choice)?,
        Answers::Recorded([a, b]) => pair::replay_jobs(plans, [a, b], flow.batch)?,
    };
    let mut records = pair::run_pairs(&jobs, flow.concurrency, sink).await;
    let mut warnings = Vec::new();
    match &flow.answers {
        Answers::Recorded(paths) => {
            for (pair_records, case) in records.iter_mut().zip(flow.cases) {
                for (record, path) in pair_records.iter_mut().zip(paths) {
                    let case = if flow.batch { case.as_deref() } else { None };
                    pair::keep_recorded_times(record, &pair::recorded_turns(path, case)?);
                }
            }
        }
        Answers::Live(_) if flow.record_history => {
            for record in records.iter().flatten() {
                if let Err(error) = job::keep(record, &History::DataDir) {
                    warnings.push(format!("the run was not added to the history: {error}"));
                }
            }
        }
        Answers::Live(_) => {}
    }
    let comparisons = records
        .into_iter()
        .zip(flow.cases)
        .map(|(pair, case)| Comparison::new(case.clone(), flow.sides, pair, flow.key))
        .collect();
    Ok(Compared { comparisons, warnings })
}
