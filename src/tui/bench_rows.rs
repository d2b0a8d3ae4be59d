//! (feature `testing`) The `tui` bench's workbench at 10,000 dataset rows: opening it (the prompt and
//! its dataset read, the first frame drawn), a key typed in the template, a key typed into the case
//! filter (`/`: the cases re-filtered) and a page down through the case list, each handled by the
//! loop's own `handle` with a frame drawn after it. Baseline: the same at 100 rows, measured in the
//! same rounds (one op at 10,000 rows, then the same at 100), so the ratio says what the rows cost.

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::{Input, Key};
use serde::Serialize;

use crate::provider::replay::Pace;
use crate::tui::app::App;
use crate::tui::msg::{Action, Msg, TermEvent};
use crate::tui::setup::{build, Options};

/// The rows measured, and the baseline's.
pub const ROWS: usize = 10_000;
pub const BASELINE_ROWS: usize = 100;

/// Rounds of each op (its median is kept).
const ROUNDS: usize = 15;

/// One op at [`ROWS`] rows and at [`BASELINE_ROWS`], median milliseconds, and their ratio.
#[derive(Debug, Serialize)]
pub struct RowsOp {
    pub ms: f64,
    pub baseline_ms: f64,
    pub ratio: f64,
}

/// What the workbench costs at 10,000 dataset rows.
#[derive(Debug, Serialize)]
pub struct RowsFigures {
    pub rows: usize,
    pub baseline_rows: usize,
    /// Opened: the prompt and its dataset read, the state made, the first frame drawn.
    pub open: RowsOp,
    /// A key typed in the template and the frame after it.
    pub key: RowsOp,
    /// A key typed into the case filter (every case looked at again) and the frame after it.
    pub filter_key: RowsOp,
    /// A page down in the case list and the frame after it.
    pub page_down: RowsOp,
}

/// A prompt whose dataset (`cases.jsonl`) has `rows` rows, in `dir`; its path.
fn write_prompt(dir: &Path, rows: usize) -> anyhow::Result<std::path::PathBuf> {
    let dir = dir.join(format!("rows-{rows}"));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("rows.toml");
    std::fs::write(
        &path,
        "id = \"rows\"\nresponse_type = \"jsonl\"\ntemplate = \"Define every entity in: {{text}}\"\ncases_file = \"cases.jsonl\"\n",
    )?;
    let lines: String = (0..rows)
        .map(|row| {
            format!("{{\"name\": \"case-{row:05}\", \"text\": \"Row {row}: a paragraph about cells, ribosomes and the proteins they make.\", \"expected\": [{{\"entity\": \"ribosome\"}}]}}\n")
        })
        .collect();
    std::fs::write(dir.join("cases.jsonl"), lines)?;
    Ok(path)
}

fn open(path: &Path, data_dir: &Path) -> anyhow::Result<(App, Terminal<TestBackend>)> {
    let options = Options {
        data_dir: Some(data_dir.to_path_buf()),
        pace: Some(Pace::Instant),
        run_now: false,
        no_fetch: true,
        warm_model: false,
    };
    let (mut app, _tx) = build(path, options)?;
    app.state.choice.provider = crate::provider::kind::ProviderKind::Openai;
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    terminal.draw(|frame| crate::tui::view::render(frame, &app.state, &app.theme))?;
    Ok((app, terminal))
}

/// `msg` handled and a frame drawn; how long that took.
fn timed(app: &mut App, terminal: &mut Terminal<TestBackend>, msg: Msg) -> anyhow::Result<Duration> {
    let started = Instant::now();
    app.handle(msg);
    terminal.draw(|frame| crate::tui::view::render(frame, &app.state, &app.theme))?;
    Ok(started.elapsed())
}

fn key(c: char) -> Msg {
    Msg::Term(TermEvent::Key(Input { key: Key::Char(c), ..Input::default() }))
}

fn special(key: Key) -> Msg {
    Msg::Term(TermEvent::Key(Input { key, ..Input::default() }))
}

/// The median of `times` in milliseconds.
fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times.get(times.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn op(mut at_rows: Vec<Duration>, mut baseline: Vec<Duration>) -> RowsOp {
    let (ms, baseline_ms) = (median_ms(&mut at_rows), median_ms(&mut baseline));
    RowsOp { ms, baseline_ms, ratio: ms / baseline_ms.max(1e-9) }
}

/// Measures the ops in `dir` (prompts, datasets and a data directory are written there).
pub fn measure(dir: &Path) -> anyhow::Result<RowsFigures> {
    let paths = [write_prompt(dir, ROWS)?, write_prompt(dir, BASELINE_ROWS)?];
    let data_dir = dir.join("rows-data");
    // Opening, alternately.
    let mut opened: [Vec<Duration>; 2] = Default::default();
    for _ in 0..ROUNDS.div_ceil(3) {
        for (path, times) in paths.iter().zip(&mut opened) {
            let started = Instant::now();
            let (app, terminal) = open(path, &data_dir)?;
            times.push(started.elapsed());
            drop((app, terminal));
        }
    }
    let mut apps = [open(&paths[0], &data_dir)?, open(&paths[1], &data_dir)?];
    for (app, _) in &apps {
        anyhow::ensure!(
            app.state.cases.len() >= BASELINE_ROWS,
            "the bench dataset was not listed: {:?}",
            app.state.note
        );
    }
    // Keys in the template, alternately.
    let mut keys: [Vec<Duration>; 2] = Default::default();
    for (app, terminal) in &mut apps {
        app.handle(Msg::Action(Action::FocusTemplate));
        timed(app, terminal, key('x'))?;
    }
    for round in 0..ROUNDS {
        for ((app, terminal), times) in apps.iter_mut().zip(&mut keys) {
            times.push(timed(app, terminal, key(if round % 2 == 0 { 'y' } else { 'z' }))?);
        }
    }
    // Keys into the case filter (a name that holds ten of the 10,000), then backspaced, alternately.
    let mut filter_keys: [Vec<Duration>; 2] = Default::default();
    for (app, terminal) in &mut apps {
        app.handle(Msg::Action(Action::FocusVariables));
        timed(app, terminal, key('/'))?;
    }
    for round in 0..ROUNDS {
        for ((app, terminal), times) in apps.iter_mut().zip(&mut filter_keys) {
            let msg = if round % 2 == 0 { key('9') } else { special(Key::Backspace) };
            if round == 0 {
                for c in "case-0".chars() {
                    timed(app, terminal, key(c))?;
                }
            }
            times.push(timed(app, terminal, msg)?);
        }
    }
    for (app, terminal) in &mut apps {
        timed(app, terminal, special(Key::Esc))?;
        anyhow::ensure!(app.state.input.is_none(), "the case filter did not close: {:?}", app.state.note);
    }
    // Pages down the list, alternately.
    let mut pages: [Vec<Duration>; 2] = Default::default();
    for _ in 0..ROUNDS {
        for ((app, terminal), times) in apps.iter_mut().zip(&mut pages) {
            times.push(timed(app, terminal, special(Key::PageDown))?);
        }
    }
    let [opened_rows, opened_baseline] = opened;
    let [keys_rows, keys_baseline] = keys;
    let [filter_rows, filter_baseline] = filter_keys;
    let [pages_rows, pages_baseline] = pages;
    Ok(RowsFigures {
        rows: ROWS,
        baseline_rows: BASELINE_ROWS,
        open: op(opened_rows, opened_baseline),
        key: op(keys_rows, keys_baseline),
        filter_key: op(filter_rows, filter_baseline),
        page_down: op(pages_rows, pages_baseline),
    })
}
