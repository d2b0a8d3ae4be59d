//! Start-up: the prompt loaded (errors before the terminal is touched), its schema text, keymap and
//! theme from the config directory, the run choice (the local model, else the recorded answer via
//! replay, saying why), unsaved edits offered back, the history loaded in the background.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::time::Instant;

use crate::files;
use crate::prompt::file::PromptFile;
use crate::provider::kind::ProviderKind;
use crate::provider::replay::Pace;
use crate::run::{local_model, LocalModel};
use crate::tui::app::{App, LoopStats};
use crate::tui::keymap::{Keymap, DEFAULT_KEYMAP};
use crate::tui::msg::{Effect, Msg};
use crate::tui::runner::{absolute, Runner};
use crate::tui::state::{Overlay, State};
use crate::tui::theme::Theme;
use crate::tui::{paths, recovery, sample};

/// How the workbench starts.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The data directory (`None`: the platform's or `TUNEBENCH_DATA_DIR`).
    pub data_dir: Option<PathBuf>,
    /// Replay pace for transcript files (`TUNEBENCH_REPLAY_SPEED`: recorded, instant, 10x).
    pub pace: Option<Pace>,
    /// Start the run at once (the sample on a fresh start), of the prompt's first case when it has
    /// cases, so the run is scored against that case's expected answer beside its line verdicts.
    pub run_now: bool,
    /// Do not fetch a missing local model in the background (`--no-fetch`).
    pub no_fetch: bool,
    /// Load the local model (when it is the provider) in the background at once, and run the prompt
    /// through it, so the first run starts warm (the terminal workbench; off in tests).
    pub warm_model: bool,
}

/// The workbench on the prompt at `path`, ready to loop (no terminal needed).
pub fn build(path: &Path, options: Options) -> anyhow::Result<(App, Sender<Msg>)> {
    let started = Instant::now();
    let mut state = state_for(path)?;
    let mut notes: Vec<String> = Vec::new();
    let config = paths::config_dir();
    let user_keymap = config.as_ref().and_then(|d| settings_file(&d.join("keymap.toml"), &mut notes));
    match Keymap::from_toml(DEFAULT_KEYMAP, user_keymap.as_deref()) {
        Ok(keymap) => state.keymap = keymap,
        Err(e) => notes.push(format!("{e} (default keys used)")),
    }
    let theme = load_theme(config.as_deref(), &mut notes);
    let data_dir = options.data_dir.clone().or_else(|| paths::data_dir().ok());
    if let Some(dir) = &data_dir {
        match recovery::read(dir, &absolute(path)) {
            Ok(Some(edits))
                if [edits.system.clone(), edits.template.clone(), edits.schema.clone()] != state.texts()
                    || edits.variables.is_some() =>
            {
                state.overlay = Overlay::Recovery(Box::new(edits));
            }
            Ok(_) => {}
            Err(e) => notes.push(e),
        }
    }
    if !notes.is_empty() {
        state.note = Some(notes.join("; "));
    }
    let (tx, rx) = channel();
    let mut runner = Runner::new(tx.clone(), data_dir)?;
    runner.prompt_path = Some(path.to_path_buf());
    runner.pace = options
        .pace
        .or_else(|| std::env::var("TUNEBENCH_REPLAY_SPEED").ok().and_then(|s| Pace::parse(&s)))
        .unwrap_or(Pace::Recorded);
    let mut app = App { state, theme, rx, runner, started, stats: LoopStats::default() };
    app.runner.watch(crate::tui::workbench::outside::watched(&app.state));
    // A large schema is linted in the background: the first frame does not wait for it.
    if let Some(request) = crate::tui::workbench::lint::ask(&mut app.state, false) {
        let follow = app.runner.execute(Effect::Lint(Box::new(request)));
        follow.into_iter().for_each(|m| app.handle(m));
    }
    let follow = app.runner.execute(Effect::LoadHistory { prompt_id: app.state.saved.id.clone() });
    follow.into_iter().for_each(|m| app.handle(m));
    let follow = app.runner.execute(Effect::ListEvals { path: app.state.path.clone() });
    follow.into_iter().for_each(|m| app.handle(m));
    if app.state.fetch_model && !options.no_fetch {
        app.state.note = Some("local model: fetching it in the background (--no-fetch skips this)".into());
        let follow = app.runner.execute(Effect::FetchModel);
        follow.into_iter().for_each(|m| app.handle(m));
    }
    // The local model loads (and the prompt runs through it) while the user reads the screen.
    if options.warm_model
        && app.state.choice.provider == ProviderKind::Local
        && !app.state.fetch_model
        && !options.run_now
    {
        if let Ok(request) = crate::tui::workbench::request::run_request(&app.state, None, None) {
            let follow = app.runner.execute(Effect::WarmModel(Box::new(request)));
            follow.into_iter().for_each(|m| app.handle(m));
        }
    }
    if options.run_now && app.state.overlay == Overlay::None {
        choose_first_case(&mut app.state);
        app.handle(Msg::Action(crate::tui::msg::Action::Run));
    }
    Ok((app, tx))
}

/// The prompt's first case chosen, as alt-c chooses it (none: the default variables stay).
fn choose_first_case(state: &mut State) {
    if let Some(case) = state.cases.first() {
        state.choice.case = Some(case.name.clone());
        // The variables pane's rows: the default variables, then each case.
        state.workbench.selected_variable = 1;
    }
}

/// The state of a fresh workbench on the prompt at `path` (default keys, provider chosen), no IO
/// beyond reading the prompt (and its schema file and recorded answer).
pub fn state_for(path: &Path) -> anyhow::Result<State> {
    let mut file = PromptFile::read(path)?;
    let dataset_note = crate::tui::edit::with_dataset(&mut file.prompt, path);
    // The prompt's provider and structured mode are typed here, where the workbench opens on them.
    crate::tui::choice::Choice::of(&file.prompt).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let (schema_text, schema_kind) = crate::tui::edit::schema_text(&file, path)?;
    let mut state = State::new(path.to_path_buf(), file, schema_text, schema_kind);
    // Linted now when small; a large schema's lint is due, asked for when the workbench starts.
    crate::tui::workbench::lint::relint(&mut state);
    choose_provider(&mut state);
    if dataset_note.is_some() {
        state.note = dataset_note;
    }
    Ok(state)
}

/// The text of a keymap or theme file, if there is one (a file that cannot be read is a note).
fn settings_file(path: &Path, notes: &mut Vec<String>) -> Option<String> {
    match files::read_text(path, files::SETTINGS) {
        Ok(text) => Some(text),
        Err(e) if e.is_not_found() => None,
        Err(e) => {
            notes.push(format!("{e} (ignored)"));
            None
        }
    }
}

/// The theme: `TUNEBENCH_THEME`, else `theme.toml` in the config directory, else dark; NO_COLOR strips colours.
fn load_theme(config: Option<&Path>, notes: &mut Vec<String>) -> Theme {
    let mut theme = match std::env::var(paths::THEME_VAR).ok().filter(|t| !t.is_empty()) {
        Some(name) => Theme::named(&name).unwrap_or_else(|e| {
            notes.push(e);
            Theme::default()
        }),
        None => {
            let path = config.map(|d| d.join("theme.toml"));
            match path.and_then(|p| settings_file(&p, notes).map(|t| (p, t))) {
                Some((path, text)) => Theme::from_user_file(&text, &path.display().to_string()).unwrap_or_else(|e| {
                    notes.push(e);
                    Theme::default()
                }),
                None => Theme::default(),
            }
        }
    };
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        theme = theme.without_colors();
    }
    theme
}

/// The prompt's provider; with none (or `local`), the embedded model when it is in the cache (it loads
/// at the first run, in the background), else the recorded answer next to the prompt via replay, the
/// status bar saying why, while the model is fetched ([`State::fetch_model`]).
fn choose_provider(state: &mut State) {
    let transcript = sample::transcript_for(&state.path);
    state.choice.transcript = transcript.clone();
    // A provider the prompt names (typed when the state was made) other than the local model stays.
    if state.saved.provider.name.is_some() && state.choice.provider != ProviderKind::Local {
        return;
    }
    // A local model file the prompt names is run (any error is the run's): nothing is fetched for it.
    let named = state.choice.model.clone().unwrap_or_default();
    if state.saved.provider.name.is_some() && !named.is_empty() {
        crate::tui::workbench::fetch::use_local_model(state);
        return;
    }
    let why = match local_model() {
        LocalModel::Ready => {
            crate::tui::workbench::fetch::use_local_model(state);
            return;
        }
        LocalModel::Missing(why) => {
            // The one rule every job fetches by (`run::needs_default_model`): local, no model named, missing.
            state.fetch_model = crate::run::needs_default_model([(ProviderKind::Local, named.as_str())]);
            format!("the local model is not fetched yet: {why}")
        }
        LocalModel::Unavailable(why) => why,
    };
    match transcript {
        Some(path) => {
            state.choice.provider = ProviderKind::Replay;
            state.replay_reason = Some(format!("replay: {} ({why})", path.display()));
        }
        None if state.fetch_model => {
            state.choice.provider = ProviderKind::Local;
            state.note = Some(format!("{why}; runs wait for the fetch"));
        }
        None => {
            state.choice.provider = ProviderKind::Openai;
            state.note = Some(format!("no local model ({why}) and no recorded answer: alt-p picks a provider"));
        }
    }
}
