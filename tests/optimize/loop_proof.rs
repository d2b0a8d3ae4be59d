//! The whole loop through the binary: a known-good edit found, ranked first on held-out and applied;
//! a bad edit worse on held-out and not best; a malformed proposal rejected with its reason; the
//! budget kept; bad input exit 2 naming the flag; the record listed and shown.

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
    let output = optimize(
        dir.path(),
        &prompt,
        &s.server,
        &["--max-proposals", "1", "--demos", "0", "--no-ablation", "--json", "--apply", "best"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
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

    // Applied: only the system prompt changed, the comment and everything else byte for byte.
    let written = std::fs::read_to_string(&prompt).unwrap();
    let expected = PROMPT.replace("system = \"Name the entity of the text.\"", &format!("system = \"{GOOD}\""));
    assert_eq!(written, expected);

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
    let show = assert_cmd::Command::cargo_bin("tunebench")
        .unwrap()
        .env("TUNEBENCH_DATA_DIR", dir.path())
        .args(["optimize", "show", record["id"].as_str().unwrap()])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&show.stdout).into_owned();
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
