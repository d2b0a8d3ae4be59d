//! The whole loop through the binary: a known-good edit found, ranked first on held-out and applied;
//! a bad edit worse on held-out and not best; a malformed proposal rejected with its reason; the
//! budget kept; bad input exit 2 naming the flag; the record listed and shown.

use std::sync::atomic::Ordering::SeqCst;

use super::support::{json, number, optimize, prompt_in, proposal, scripted, split, stderr, Route, PROMPT};

const GOOD: &str = "GOOD-EDIT: name the entity exactly as the text numbers it.";
const BAD: &str = "BAD-EDIT: guess.";

#[test]
fn a_known_good_edit_is_found_ranked_first_on_held_out_and_applied_leaving_the_rest_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path());
    let s = scripted(
        vec![proposal("say how entities are named", GOOD)],
        vec![Route { marker: "GOOD-EDIT", right_on: vec![1, 2, 3, 4, 5, 6] }],
    );
    let output =
        optimize(dir.path(), &prompt, &s.server, &["--max-proposals", "1", "--demos", "0", "--no-ablation", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&prompt).unwrap(), PROMPT, "nothing written by the run itself");
    let record = json(&output);
    assert_eq!(record["best"], "c1", "{record:#}");
    let c1 = &record["candidates"][0];
    assert_eq!((c1["id"].as_str(), c1["origin"].as_str()), (Some("c1"), Some("proposal")));
    assert_eq!(c1["rationale"], "say how entities are named");
    assert_eq!((c1["system"].as_str(), c1["template"].as_str()), (Some(GOOD), Some("Text: {{text}}")));
    assert_eq!(c1["train"]["pass_rate"], 1.0);
    assert_eq!(c1["held_out"]["pass_rate"], 1.0);
    assert_eq!(c1["held_out"]["mean_f1"], 1.0);
    assert!(c1["diff"].as_str().unwrap().contains(&format!("+{GOOD}")), "{c1:#}");
    assert!(c1["rejected"].is_null());
    // The baseline is right on c1–c3 alone: the held-out figures say so.
    let held = split(0).held_out;
    let right = held.iter().filter(|c| number(c) <= 3).count() as f64 / held.len() as f64;
    assert_eq!(record["baseline"]["held_out"]["pass_rate"], right);
    assert_eq!(record["split"]["held_out"].as_array().unwrap().len(), 3);
    assert_eq!(
        c1["versus_baseline"]["better"].as_u64().unwrap() as usize,
        held.iter().filter(|c| number(c) > 3).count()
    );
    assert_eq!(c1["versus_baseline"]["worse"], 0);
    // The proposer read the failures: a failed train case with its difference.
    let context = s.proposer_contexts.lock().unwrap()[0].clone();
    let failed_train = split(0).train.into_iter().find(|c| number(c) > 3).unwrap();
    assert!(context.contains(&format!("Case \\\"{failed_train}\\\"")) && context.contains("missing"), "{context}");
    assert_eq!(record["cost"]["proposer"]["calls"], 1);
    assert_eq!(record["proposer_calls"][0]["candidate"], "c1");

    // Applied as reviewed, from the record: nothing runs again (no request reaches the server).
    let asked = (s.proposer_requests.load(SeqCst), s.candidate_requests.load(SeqCst));
    let applied = optimize(dir.path(), &prompt, &s.server, &["--apply", "best"]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    assert_eq!((s.proposer_requests.load(SeqCst), s.candidate_requests.load(SeqCst)), asked, "--apply runs nothing");
    assert!(stderr(&applied).contains("applied candidate c1"), "{}", stderr(&applied));
    // Only the system prompt changed, the comment and everything else byte for byte.
    let written = std::fs::read_to_string(&prompt).unwrap();
    let expected = PROMPT.replace("system = \"Name the entity of the text.\"", &format!("system = \"{GOOD}\""));
    assert_eq!(written, expected);
    // The prompt now differs from what the optimization read: applying again is refused, naming it.
    let again = optimize(dir.path(), &prompt, &s.server, &["--apply", "c1"]);
    assert_ne!(again.status.code(), Some(0));
    assert!(stderr(&again).contains("changed since optimization"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&prompt).unwrap(), expected);

    // Listed and shown again from the data directory.
    let list = assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .args(["optimize", "list", "--json"])
        .output()
        .unwrap();
    let listed = json(&list);
    assert_eq!(listed[0]["id"], record["id"]);
    assert_eq!(listed[0]["best"], "c1");
    let table = shown(dir.path(), record["id"].as_str().unwrap());
    assert!(table.contains("best: c1") && table.contains("say how entities are named"), "{table}");
}

#[test]
fn a_bad_edit_is_worse_on_held_out_and_not_best_and_a_malformed_proposal_is_rejected_with_its_reason() {
    // A seed whose held-out cases include one the baseline gets right and whose train cases one it
    // gets wrong: the bad edit wins that train case (so it stays on the front) and loses held-out.
    let seed = (0..100).find(|&seed| {
        let s = split(seed);
        s.held_out.iter().any(|c| number(c) <= 3) && s.train.iter().any(|c| number(c) > 3)
    });
    let seed = seed.unwrap();
    let won = split(seed).train.into_iter().map(|c| number(&c)).find(|&k| k > 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path());
    let proposals = vec![proposal("guess boldly", BAD), "not json at all".into(), "still { not json".into()];
    let s = scripted(proposals, vec![Route { marker: "BAD-EDIT", right_on: vec![won] }]);
    let seed_text = seed.to_string();
    let output = optimize(
        dir.path(),
        &prompt,
        &s.server,
        &["--seed", &seed_text, "--max-proposals", "2", "--demos", "0", "--no-ablation", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record = json(&output);
    let bad = &record["candidates"][0];
    assert_eq!(bad["system"], BAD);
    assert_eq!(bad["on_front"], true, "{bad:#}");
    let (bad_held, base_held) =
        (bad["held_out"]["mean_f1"].as_f64().unwrap(), record["baseline"]["held_out"]["mean_f1"].as_f64().unwrap());
    assert!(bad_held < base_held, "bad {bad_held} vs baseline {base_held}");
    assert!(bad["versus_baseline"]["worse"].as_u64().unwrap() >= 1);
    assert_eq!(record["best"], "baseline");

    let malformed = &record["candidates"][1];
    assert_eq!(malformed["id"], "c2");
    let reason = malformed["rejected"].as_str().unwrap();
    assert!(reason.contains("malformed proposal") && reason.contains("still { not json"), "{reason}");
    assert!(malformed["train"].is_null() && malformed["held_out"].is_null());
    // Asked twice (the malformed answer once again with the error fed back), counted as a proposal.
    assert_eq!(s.proposer_requests.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(record["budget"]["proposals"], 2);
    assert_eq!(record["proposer_calls"][1]["turns"], 2);
    // Nothing written without --apply.
    assert_eq!(std::fs::read_to_string(&prompt).unwrap(), PROMPT);

    // The table stars the record's best, the baseline on this tie-or-worse, not the front's candidate.
    let table = shown(dir.path(), record["id"].as_str().unwrap());
    let row = |id: &str| table.lines().find(|l| l.starts_with(id)).unwrap_or_default().to_string();
    assert!(row("baseline").split_whitespace().next().unwrap().ends_with('★'), "{table}");
    assert!(row("c1").starts_with("c1+ ") && !row("c1").contains('★'), "{table}");

    // Run again: the good answers come from the response cache, but the malformed one is not trusted
    // from it: the proposer is asked again (both of its turns), past the cache.
    let again = optimize(
        dir.path(),
        &prompt,
        &s.server,
        &["--seed", &seed_text, "--max-proposals", "2", "--demos", "0", "--no-ablation", "--json"],
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(s.proposer_requests.load(std::sync::atomic::Ordering::SeqCst), 5, "c1 cached, c2 asked again");
    assert_eq!(json(&again)["candidates"][0]["system"], BAD);
}

/// `--proposer-base-url` sends the proposer's requests to its own server, with its own key; the
/// prompt's key (its `key_env`) goes only to the prompt's server.
#[test]
fn the_proposer_on_its_own_server_never_gets_the_prompts_key() {
    use std::sync::{Arc, Mutex};
    use tunebench::provider::wire_server::{Received, Reply, WireServer};
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // Each request: the server it reached, whether it was the proposer's, its authorization header.
    type Seen = Vec<(&'static str, bool, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let server = |name: &'static str| {
        let seen = seen.clone();
        let handler = move |request: &Received| -> Reply {
            let proposer = request.body.contains("You improve prompts");
            seen.lock().unwrap().push((name, proposer, request.header("authorization").map(str::to_string)));
            if proposer {
                return Reply::chat_stream(&proposal("be exact", GOOD), "stop", Some((100, 20)));
            }
            let case = (1..=6).find(|k| request.body.contains(&format!("CASE-{k}"))).unwrap_or(0);
            Reply::chat_stream(&format!("{{\"entity\": \"E-{case}\"}}\n"), "stop", Some((30, 12)))
        };
        runtime.block_on(WireServer::start_handler(handler)).unwrap()
    };
    let (prompt_server, proposer_server) = (server("prompt"), server("proposer"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labels.toml");
    let provider = format!(
        "\n[provider]\nname = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}/v1\"\nkey_env = \"PROMPT_SECRET\"\n",
        prompt_server.url()
    );
    std::fs::write(&path, format!("{PROMPT}{provider}")).unwrap();
    let output = assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .env("TUNEBENCH_CACHE_DIR", dir.path().join("cache"))
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("PROMPT_SECRET", "sk-prompt-secret")
        .env("PROPOSER_SECRET", "sk-proposer-own")
        .arg("optimize")
        .arg(&path)
        .args(["--proposer", "openai:proposer-model", "--proposer-base-url"])
        .arg(format!("{}/v1", proposer_server.url()))
        .args(["--proposer-key-env", "PROPOSER_SECRET", "--max-proposals", "1", "--demos", "0", "--no-ablation"])
        .args(["--concurrency", "1", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen = seen.lock().unwrap().clone();
    let proposer_calls: Vec<_> = seen.iter().filter(|(_, proposer, _)| *proposer).collect();
    assert!(!proposer_calls.is_empty(), "the proposer was asked: {seen:?}");
    for (server, proposer, auth) in &seen {
        match (*server, *proposer) {
            ("proposer", true) => assert_eq!(auth.as_deref(), Some("Bearer sk-proposer-own")),
            ("prompt", false) => assert_eq!(auth.as_deref(), Some("Bearer sk-prompt-secret")),
            other => panic!("a request went to the wrong server: {other:?} {seen:?}"),
        }
    }
}

#[test]
fn the_budget_of_cells_is_kept_and_counts_every_cell_scored() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path());
    let good = |n: usize| proposal(&format!("try {n}"), &format!("GOOD-EDIT {n}"));
    let s =
        scripted((1..=4).map(good).collect(), vec![Route { marker: "GOOD-EDIT", right_on: vec![1, 2, 3, 4, 5, 6] }]);
    let output = optimize(
        dir.path(),
        &prompt,
        &s.server,
        &["--budget", "12", "--max-proposals", "4", "--demos", "0", "--no-ablation", "--json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record = json(&output);
    let scored = record["budget"]["cells_scored"].as_u64().unwrap() as usize;
    assert!(scored <= 12, "{scored} cells scored over a budget of 12");
    assert_eq!(
        scored,
        s.candidate_requests.load(std::sync::atomic::Ordering::SeqCst),
        "every cell asked the model once"
    );
    assert_eq!(record["cost"]["candidates"]["calls"].as_u64().unwrap() as usize, scored);
    assert!(record["stopped"].as_str().unwrap().contains("budget of 12"), "{record:#}");
    assert_eq!(record["budget"]["proposals"], 1, "the second proposal would not fit");
    assert_eq!(record["best"], "c1");
}

#[test]
fn bad_input_is_exit_2_naming_the_flag_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path());
    let s = scripted(Vec::new(), Vec::new());
    for (args, named) in [
        (vec!["--split", "1.5"], "--split 1.5"),
        (vec!["--split", "0"], "--split 0"),
        (vec!["--budget", "0"], "--budget 0"),
        (vec!["--budget", "4"], "--budget 4: the baseline alone scores 6 cells"),
        (vec!["--proposer", "bedrock:claude"], "--proposer \"bedrock:claude\" is not a model"),
    ] {
        let output = optimize(dir.path(), &prompt, &s.server, &args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(named), "{args:?}: {}", stderr(&output));
    }
    let one = dir.path().join("one.toml");
    let first_case_only = PROMPT.split("\n[[cases]]\nname = \"c2\"").next().unwrap();
    std::fs::write(&one, first_case_only).unwrap();
    let output = optimize(dir.path(), &one, &s.server, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("one.toml: the prompt has 1 case: an optimization needs at least 2"),
        "{}",
        stderr(&output)
    );
    assert_eq!(s.server.received().len(), 0, "no model was called");
}

/// `tunebench optimize show ID`'s table, from the data directory `dir`.
fn shown(dir: &std::path::Path, id: &str) -> String {
    let show = assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", dir)
        .args(["optimize", "show", id])
        .output()
        .unwrap();
    String::from_utf8_lossy(&show.stdout).into_owned()
}
