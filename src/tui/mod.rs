//! The workbench: a ratatui TUI over the core (feature `tui`; the core never imports this module).
//!
//! - [`msg`]: the four enums — `TermEvent`, `Action` ([`action`]), `Msg`, `Effect` — and the payloads
//!   they carry; [`state`] and [`msg`] import no file whose logic uses them (no import cycle in src/tui).
//! - [`state`]: what every screen shares, `State { screen, … }` (which screen is shown, the prompt and
//!   its editors, the overlays, each screen's state once); [`choice`]: the run choice; [`edit`]: the
//!   editors' texts as a prompt.
//! - The screens, one folder each with its state, pure update, view and job: [`workbench`] (the
//!   editing screen; also what ctrl-r sends, its token count, the schema's lint, the cases), [`eval`], [`compare`], [`optimize`]. A screen never imports another one nor what is above it.
//!   Their jobs' progress is one [`phase::JobPhase`].
//! - [`update`]: the router, `update(&mut State, Msg) -> Vec<Effect>`, pure; [`view`]: draws the screen
//!   shown, the status line and the overlays; [`panes`]: the panes the screens share.
//! - [`app`]: the loop (batches of messages, a render at most every 16 ms); [`runner`]: effects (every
//!   screen's job through one `Effect::Start`/`Effect::Cancel` pair); [`jobs`]: the job bridge (one
//!   runtime, one cancel map); [`latest`]: background workers where the newest job wins (the lint,
//!   the token count).
//! - [`keymap`] (+ `keymap.toml`), [`theme`] (`themes/*.toml`), [`recovery`], [`sample`], [`log`], [`paths`].
//! - [`terminal`]: raw mode, mouse, the panic hook and the input thread; [`setup`]: the start-up.
//! - `bench`, `bench_rows`, `bench_schema` (feature `testing`): the `tui` section of `tunebench bench` (the real loop
//!   on a test backend; keys typed into a 7 MB schema).

pub mod action;
pub mod app;
#[cfg(feature = "testing")]
pub mod bench;
#[cfg(feature = "testing")]
pub mod bench_rows;
#[cfg(feature = "testing")]
pub mod bench_schema;
pub mod case_filter;
pub mod case_list;
pub mod choice;
pub mod compare;
pub mod edit;
pub mod editor;
pub mod eval;
pub mod input;
pub mod input_box;
pub mod jobs;
pub mod keymap;
pub mod latest;
pub mod log;
pub mod msg;
pub mod optimize;
pub mod panes;
pub mod paths;
pub mod phase;
pub mod recovery;
pub mod run_view;
pub mod runner;
pub mod sample;
pub mod series;
pub mod setup;
pub mod state;
pub mod terminal;
pub mod theme;
pub mod update;
pub mod variables;
pub mod view;
pub mod workbench;

pub use terminal::start;
