//! The first start, as `tunebench` with no argument makes it: the sample written to the data
//! directory, its first case chosen and run at once (here on the embedded model's recorded answer, as
//! while the model is fetched), and the case's verdict against its expected answer shown beside the
//! answer's own verdict, so a valid answer and a right one are never confused; the run goes to the
//! history in the workbench's data directory, the one its history pane reads.

use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use tunebench::eval::score::Verdict;
use tunebench::provider::replay::Pace;
use tunebench::tui::msg::{Action, Msg};
use tunebench::tui::sample;
use tunebench::tui::setup::{build, Options};
use tunebench::tui::view::render;
use tunebench::tui::workbench::state::RunPhase;

#[test]
fn the_first_start_runs_the_samples_first_case_and_shows_it_passes() {
    super::support::without_local_model();
    let dir = tempfile::tempdir().unwrap();
    let path = sample::ensure(&dir.path().join("data")).unwrap();
    let options = Options {
        data_dir: Some(dir.path().join("data")),
        pace: Some(Pace::Instant),
        run_now: true,
        no_fetch: true,
        warm_model: false,
    };
    let (mut app, _tx) = build(&path, options).unwrap();
    assert_eq!(
        app.state.choice.provider,
        tunebench::provider::kind::ProviderKind::Replay,
        "no model here: the recorded answer plays"
    );
    assert_eq!(app.state.choice.case.as_deref(), Some("flight"), "the first run is of a case with an expected answer");

    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    // A guard, not a measurement: a run that never ends fails below instead of hanging the suite.
    let started = Instant::now();
    // Until the run is scored and read back from the history in the workbench's data directory.
    app.run(&mut terminal, |state| {
        (state.workbench.run.scored.is_some() && !state.workbench.history.is_empty())
            || matches!(state.workbench.phase, RunPhase::Failed(_))
            || started.elapsed() > Duration::from_secs(120)
    })
    .unwrap();
    let score = match &app.state.workbench.run.scored {
        Some(Ok(score)) => score,
        other => panic!("the first case's run was not scored: {other:?} (phase {:?})", app.state.workbench.phase),
    };
    assert_eq!(score.verdict, Verdict::Pass, "{}", score.reason);
    assert_eq!(
        app.state.workbench.run.output.trim(),
        r#"{"traveller":"Maria","from":"Lisbon","to":"Oslo","day":"Friday"}"#,
        "the model's own answer, not an example written by hand"
    );

    let history = std::fs::read_to_string(dir.path().join("data/history.jsonl")).unwrap();
    assert!(history.contains(r#""prompt":"extract-trip","case":"flight""#), "the run went to this history");

    terminal.draw(|frame| render(frame, &app.state, &app.theme)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(screen.contains("✓ valid") && screen.contains("case pass"), "valid, and right:\n{screen}");
    assert!(screen.contains("○ train"), "the other cases are listed to try next:\n{screen}");
}

/// A case the model gets wrong: its answer is valid, and the pane says under "✓ valid" that the case
/// fails and which fields differ (the answer is the model's to `train`, as measured on the sample).
#[test]
fn a_valid_but_wrong_answer_shows_the_case_failing_and_each_difference() {
    super::support::without_local_model();
    let dir = tempfile::tempdir().unwrap();
    let path = sample::ensure(&dir.path().join("data")).unwrap();
    let answer = r#"{"traveller":"Tom","from":"Lisle","to":"Yorkshire","day":"Monday"}"#;
    let transcript = format!(
        "{}\n{}\n{}\n",
        r#"{"transcript":1,"provider":"local","model":""}"#,
        serde_json::json!({"t_ms": 1, "delta": answer}),
        r#"{"t_ms":2,"finish_reason":"stop"}"#
    );
    std::fs::write(path.parent().unwrap().join("answers/extract-trip.jsonl"), transcript).unwrap();
    let options = Options {
        data_dir: Some(dir.path().join("data")),
        pace: Some(Pace::Instant),
        no_fetch: true,
        ..Options::default()
    };
    let (mut app, _tx) = build(&path, options).unwrap();
    app.state.choice.case = Some("train".into());
    app.handle(Msg::Action(Action::Run));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let started = Instant::now();
    app.run(&mut terminal, |state| {
        state.workbench.run.scored.is_some()
            || matches!(state.workbench.phase, RunPhase::Failed(_))
            || started.elapsed() > Duration::from_secs(120)
    })
    .unwrap();
    terminal.draw(|frame| render(frame, &app.state, &app.theme)).unwrap();
    let screen = terminal.backend().to_string();
    assert!(screen.contains("✓ valid"), "{screen}");
    assert!(screen.contains("case fail: fields 0.50 <"), "{screen}");
    assert!(screen.contains(r#"the answer /from: expected"#) && screen.contains(r#"got "Lisle""#), "{screen}");
    assert!(!screen.contains("✓0 ✗0"), "no JSONL line counts over a json answer:\n{screen}");
}

#[test]
fn a_large_schema_is_linted_in_the_background_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // Over the 64 kB from which the lint leaves the loop, with an error the lint must find.
    let schema = tunebench::tui::bench_schema::large_schema(100_000).replacen("\"string\"", "\"strin\"", 1);
    let path = dir.path().join("large.toml");
    std::fs::write(&path, format!("id = \"large\"\ntemplate = \"Fill the fields.\"\nschema = '''\n{schema}\n'''\n"))
        .unwrap();
    let options = Options {
        data_dir: Some(dir.path().join("data")),
        pace: Some(Pace::Instant),
        run_now: false,
        no_fetch: true,
        warm_model: false,
    };
    let (mut app, _tx) = build(&path, options).unwrap();
    assert!(app.state.heavy());
    assert!(app.state.workbench.schema_unlinted, "the start did not lint the large schema in place");
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    app.state.workbench.focus = tunebench::tui::workbench::state::Pane::Schema;
    terminal.draw(|frame| render(frame, &app.state, &app.theme)).unwrap();
    assert!(terminal.backend().to_string().contains("linting the schema"), "not shown as compiling before its lint");
    let started = Instant::now();
    app.run(&mut terminal, |state| !state.workbench.schema_unlinted || started.elapsed() > Duration::from_secs(120))
        .unwrap();
    assert!(!app.state.workbench.schema_unlinted, "the background lint came back");
    assert!(
        app.state.workbench.lint.issues.iter().any(|issue| issue.contains("strin")),
        "{:?}",
        app.state.workbench.lint.issues
    );
}

/// The start-up fetches the default model by the rule every job uses (`run::needs_default_model`):
/// only for a local run that names no model. A prompt naming its own GGUF runs that file; nothing is
/// fetched for it, and the default model's absence does not send it to the replay.
#[test]
fn a_prompt_naming_its_own_local_model_fetches_nothing() {
    super::support::without_local_model();
    let dir = tempfile::tempdir().unwrap();
    let prompt = |provider: &str| {
        let path = dir.path().join(format!("p{}.toml", provider.len()));
        let text = format!(
            "id = \"p\"\ntemplate = \"Say {{{{ x }}}}\"\n\n[variables]\nx = \"hi\"\n\n[provider]\n{provider}\n"
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let options =
        || Options { data_dir: None, pace: Some(Pace::Instant), run_now: false, no_fetch: true, warm_model: false };
    let named = prompt("name = \"local\"\nmodel = \"/models/qwen3-0.6b-q4_k_m.gguf\"");
    let (app, _tx) = build(&named, options()).unwrap();
    assert_eq!(app.state.choice.provider, tunebench::provider::kind::ProviderKind::Local);
    assert_eq!(app.state.choice.model.as_deref(), Some("/models/qwen3-0.6b-q4_k_m.gguf"));
    assert!(!app.state.fetch_model, "the named file is run, the default model is not fetched");

    let unnamed = prompt("name = \"local\"");
    let (app, _tx) = build(&unnamed, options()).unwrap();
    assert!(app.state.fetch_model, "a local run naming no model needs the default one");
}
