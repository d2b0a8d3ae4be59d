//! (tests) Run records made the way `run` makes them: an answer played by the replay provider
//! through the run engine, so verdicts are scored on real records (truncation, usage, parse report).

use std::path::Path;

use serde_json::json;

use crate::prompt::file::{PromptFile, ProviderSettings};
use crate::provider::Usage;
use crate::run::setup::{ReplayFrom, RunSetup, SetupOptions};
use crate::run::{engine, RunRecord};
use crate::truncate::transcript::{Chunk, End, Header, Transcript};

/// How the replayed stream ends.
pub enum Ending {
    Finish(&'static str),
    Error,
}

/// `answer` to `case` of `prompt`, streamed in three chunks and ended by `ending`, with 40 tokens in
/// and one output token per 4 bytes reported.
pub fn record(prompt: &PromptFile, case: Option<&str>, answer: &str, ending: Ending) -> RunRecord {
    let mut cuts: Vec<usize> = [answer.len() / 3, 2 * answer.len() / 3]
        .into_iter()
        .map(|mut at| {
            while !answer.is_char_boundary(at) {
                at -= 1;
            }
            at
        })
        .collect();
    cuts.insert(0, 0);
    cuts.push(answer.len());
    let chunks = cuts
        .windows(2)
        .enumerate()
        .map(|(i, w)| Chunk {
            t_ms: 10 * (i as u64 + 1),
            delta: answer[w[0]..w[1]].to_string(),
            token: None,
            ..Chunk::default()
        })
        .filter(|c| !c.delta.is_empty())
        .collect();
    let usage = Usage {
        input_tokens: 40,
        output_tokens: answer.len().div_ceil(4) as u64,
        estimated: false,
        cached_input_tokens: 0,
    };
    let end = match ending {
        Ending::Finish(reason) => End { t_ms: 50, finish_reason: Some(reason.into()), usage: Some(usage), error: None },
        Ending::Error => End { t_ms: 50, finish_reason: None, usage: None, error: Some(json!("HTTP 503: overloaded")) },
    };
    let transcript = Transcript {
        header: Header { transcript: 1, provider: "replay".into(), model: "recorded".into(), request: json!(null) },
        chunks,
        end: Some(end),
    };
    run_with(
        prompt,
        case,
        ProviderSettings { name: Some("replay".into()), ..ProviderSettings::default() },
        Some(transcript),
    )
}

/// `case` run against an OpenAI-compatible server that is not there (a closed local port).
pub fn unreachable(prompt: &PromptFile, case: Option<&str>) -> RunRecord {
    let settings = ProviderSettings {
        name: Some("openai".into()),
        model: Some("m".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        timeout: Some(10.0),
        ..ProviderSettings::default()
    };
    run_with(prompt, case, settings, None)
}

fn run_with(
    prompt: &PromptFile,
    case: Option<&str>,
    overrides: ProviderSettings,
    replay: Option<Transcript>,
) -> RunRecord {
    let mut options = SetupOptions::from_flags(overrides).expect("the test's settings are well named");
    options.max_turns = Some(1);
    options.target.replay = replay.map(|t| ReplayFrom::Transcript(Box::new(t)));
    let setup = RunSetup::new(prompt.clone(), Path::new("t.toml"), options).expect("the test prompt sets up");
    let plan = setup.plan(case).expect("the case plans");
    let provider =
        setup.provider_with(case, &|name| (name == "OPENAI_API_KEY").then(|| "k".to_string())).expect("a provider");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(engine::run(&*provider, &plan, |_| {}))
}
