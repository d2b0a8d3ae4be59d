//! (feature `testing`) The `tui` bench's keys typed into a large schema: a prompt whose inline schema
//! is about 7 MB, the schema pane focused and the cursor inside a description (the schema stays
//! valid, so a lint has it all to compile), each key handled by the loop's own `handle` (update and
//! effects) and a frame drawn after it, as the loop does; then the loop runs until the lint and the
//! token count of the last text are shown (they run in the background once typing settles), and the
//! longest message it handled meanwhile is kept. Baseline: one lint of the same schema text.

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use ratatui_textarea::{CursorMove, Input, Key};
use serde::Serialize;

use crate::provider::replay::Pace;
use crate::tui::msg::{Msg, TermEvent};
use crate::tui::setup::{build, Options};
use crate::tui::workbench::state::Pane;

/// Keys typed into the schema.
const KEYS: usize = 30;

/// What typing into the large schema costs.
#[derive(Debug, Serialize)]
pub struct SchemaKeyFigures {
    pub schema_bytes: usize,
    pub keys: usize,
    /// A key handled (update and its effects) and the frame after it drawn.
    pub key_median_ms: f64,
    pub key_max_ms: f64,
    /// Baseline: the schema text linted once (JSON read, schema compiled).
    pub lint_once_ms: f64,
    pub key_vs_lint: f64,
    /// From the last key to the lint and the token count of its text on screen (the loop running).
    pub settled_ms: f64,
    /// The longest one message took the loop meanwhile (the settling one asks for the count).
    pub longest_message_ms: f64,
}

/// A JSON Schema of about `bytes` bytes, pretty-printed: an object with many described string fields.
pub fn large_schema(bytes: usize) -> String {
    let mut properties = serde_json::Map::new();
    let mut size = 0;
    let mut index = 0;
    while size < bytes {
        let description = format!("field {index} of the bench schema, described at some length as real schemas are");
        size += description.len() + 60;
        properties.insert(format!("p{index}"), serde_json::json!({"type": "string", "description": description}));
        index += 1;
    }
    let schema = serde_json::json!({"type": "object", "properties": properties, "required": ["p0"]});
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// Types [`KEYS`] characters into a schema of about `bytes` bytes in a workbench on `dir`.
pub fn measure(dir: &Path, bytes: usize) -> anyhow::Result<SchemaKeyFigures> {
    let schema = large_schema(bytes);
    let path = dir.join("large-schema.toml");
    std::fs::write(
        &path,
        format!(
            "id = \"large\"\nresponse_type = \"jsonl\"\ntemplate = \"Fill the fields.\"\nschema = '''\n{schema}\n'''\n"
        ),
    )?;
    let started = Instant::now();
    std::hint::black_box(crate::schema::lint_schema_text(&schema).is_ok());
    let lint_once = started.elapsed();

    let options = Options {
        data_dir: Some(dir.join("data")),
        pace: Some(Pace::Instant),
        run_now: false,
        no_fetch: true,
        warm_model: false,
    };
    let (mut app, _tx) = build(&path, options)?;
    app.state.choice.provider = crate::provider::kind::ProviderKind::Openai;
    app.state.workbench.focus = Pane::Schema;
    let (row, column) = schema
        .lines()
        .enumerate()
        .find_map(|(row, line)| line.find("field 0").map(|column| (row, column)))
        .ok_or_else(|| anyhow::anyhow!("the bench schema has no description"))?;
    app.state.schema.area_mut().move_cursor(CursorMove::Jump(row as u16, column as u16));
    app.state.schema.settle();
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;
    terminal.draw(|frame| crate::tui::view::render(frame, &app.state, &app.theme))?;
    let mut times = Vec::with_capacity(KEYS);
    for i in 0..KEYS {
        let key = Input { key: Key::Char(if i % 2 == 0 { 'x' } else { 'y' }), ..Input::default() };
        let started = Instant::now();
        app.handle(Msg::Term(TermEvent::Key(key)));
        terminal.draw(|frame| crate::tui::view::render(frame, &app.state, &app.theme))?;
        times.push(started.elapsed());
    }
    anyhow::ensure!(app.state.edits >= KEYS as u64, "{} of {KEYS} keys were typed", app.state.edits);
    let last_key = Instant::now();
    app.stats.longest_message = Duration::ZERO;
    let asked = app.state.workbench.tokens.asked;
    app.run(&mut terminal, |state| {
        let counted =
            state.workbench.tokens.asked > asked && state.workbench.tokens.shown_for == state.workbench.tokens.asked;
        !state.workbench.schema_unlinted && counted
    })?;
    let settled = last_key.elapsed();
    anyhow::ensure!(
        app.state.workbench.lint.issues.is_empty(),
        "the bench schema does not lint: {:?}",
        app.state.workbench.lint.issues
    );
    let mut ms: Vec<f64> = times.iter().map(Duration::as_secs_f64).map(|s| s * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let key_median_ms = ms.get(ms.len() / 2).copied().unwrap_or(0.0);
    let lint_once_ms = lint_once.as_secs_f64() * 1e3;
    Ok(SchemaKeyFigures {
        schema_bytes: schema.len(),
        keys: KEYS,
        key_median_ms,
        key_max_ms: ms.last().copied().unwrap_or(0.0),
        lint_once_ms,
        key_vs_lint: key_median_ms / lint_once_ms.max(1e-9),
        settled_ms: settled.as_secs_f64() * 1e3,
        longest_message_ms: app.stats.longest_message.as_secs_f64() * 1e3,
    })
}
