//! A fully cached eval needs no tokenizer: the o200k BPE (tens of milliseconds to build) is never asked
//! for while every answer comes from the response cache, though the prompt sets `max_tokens` (the
//! client's own count) and the first run, which asked the server, counted. Its own test binary: the
//! count of tokenizer uses is per process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use tunebench::eval::pipeline::{self, Pipeline};
use tunebench::eval::score::Verdict;
use tunebench::eval::{EvalOptions, EvalPlan, EvalRecord};
use tunebench::provider::wire_server::{Reply, WireServer};
use tunebench::run::{CacheMode, SetupOptions};
use tunebench::truncate::tokens::o200k_uses;

const ANSWER: &str = "{\"entity\": \"Alpha\", \"definition\": \"The first letter.\"}\n";

fn prompt(base_url: &str) -> String {
    let mut text = format!(
        "id = \"cached\"\nresponse_type = \"jsonl\"\ntemplate = \"Define: {{{{text}}}}\"\n\
         schema = '''{{\"type\": \"object\", \"properties\": {{\"entity\": {{\"type\": \"string\"}}, \"definition\": {{\"type\": \"string\"}}}}, \"required\": [\"entity\", \"definition\"]}}'''\n\
         [provider]\nname = \"openai\"\nbase_url = \"{base_url}\"\nmax_tokens = 200\n[eval]\nmatch = \"entity\"\n"
    );
    for i in 0..4 {
        text.push_str(&format!(
            "[[cases]]\nname = \"case-{i}\"\nvariables = {{ text = \"MARK-{i}\" }}\n[cases.expected]\n\
             items = [{{ entity = \"Alpha\", definition = \"The first letter.\" }}]\n"
        ));
    }
    text
}

fn eval(options: &EvalOptions, runtime: &tokio::runtime::Runtime) -> EvalRecord {
    let plan = EvalPlan::new(options).unwrap();
    let pipeline = Pipeline { plan: &plan, concurrency: 2, record_history: false, wrap: None };
    runtime.block_on(pipeline::run(pipeline, |_| {}, std::future::pending())).unwrap().record
}

#[test]
fn a_fully_cached_eval_never_builds_the_tokenizer() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // Usage left out of the stream: the first run estimates it (with o200k), as for a server that sends none.
    let routes = (0..4).map(|i| (format!("MARK-{i}"), Reply::chat_stream(ANSWER, "stop", None))).collect();
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cached.toml");
    std::fs::write(&path, prompt(&format!("{}/v1", server.url()))).unwrap();
    let options = EvalOptions {
        prompts: vec![path],
        repeat: 1,
        setup: SetupOptions {
            cache: CacheMode::Use,
            cache_dir: Some(dir.path().join("responses")),
            ..SetupOptions::default()
        },
        ..EvalOptions::default()
    };

    let first = eval(&options, &runtime);
    assert!(first.cells.iter().all(|c| c.score.verdict == Verdict::Pass && !c.run.cached));
    assert_eq!(server.received().len(), 4);
    let counted = o200k_uses();
    assert!(counted > 0, "the first run counts the answers against max_tokens");

    let again = eval(&options, &runtime);
    assert_eq!(server.received().len(), 4, "every answer from the cache");
    assert!(again.cells.iter().all(|c| c.score.verdict == Verdict::Pass && c.run.cached));
    assert_eq!(o200k_uses(), counted, "the cached eval asked for the o200k tokenizer");
}
