//! Files changed outside the workbench (another editor, `git checkout`): the prompt file and its
//! schema file are reloaded when they have no unsaved edits; otherwise the author chooses: reload,
//! keep mine (merged over the file as it is now: what I did not change takes their version, and the
//! next save writes the rest), or show the difference. A save never writes over a change nobody was told of.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use ratatui_textarea::{Input, Key};

use crate::prompt::file::{Case, OnDisk, PromptFile};
use crate::tui::edit::schema_text;
use crate::tui::msg::Effect;
use crate::tui::state::{editor, OutsideChange, Overlay, SchemaKind, State};
use crate::tui::workbench::lint::relint;

/// The files the workbench watches: the prompt file, and its schema file when it has one.
pub fn watched(state: &State) -> Vec<PathBuf> {
    std::iter::once(state.path.clone()).chain(schema_file(state)).collect()
}

/// The schema file the schema pane edits, as a path beside the prompt.
fn schema_file(state: &State) -> Option<PathBuf> {
    match &state.schema_kind {
        SchemaKind::File(file) => Some(state.path.parent().unwrap_or(Path::new(".")).join(file)),
        _ => None,
    }
}

/// What the workbench last read or wrote of `path` (`None`: not one of the prompt's files).
fn known(state: &State, path: &Path) -> Option<String> {
    if path == state.path {
        return Some(state.saved_text.clone());
    }
    (schema_file(state).as_deref() == Some(path)).then(|| state.saved_texts[2].clone())
}

/// Whether `path` has edits not written yet.
fn unsaved(state: &State, path: &Path) -> bool {
    if path == state.path {
        return state.dirty || state.pending_save.is_some();
    }
    state.texts()[2] != state.saved_texts[2]
}

/// The watch saw `path` holding `text`: nothing when that is what the workbench knows, a reload
/// when nothing of it is unsaved, else the question.
pub fn noticed(state: &mut State, path: PathBuf, text: String) -> Vec<Effect> {
    if known(state, &path).is_none_or(|known| known == text) {
        return Vec::new();
    }
    if let Overlay::ChangedOutside(change) = &mut state.overlay {
        if change.path == path {
            change.text = text;
            change.diff = None;
            return Vec::new();
        }
    }
    if unsaved(state, &path) {
        ask(state, path, text, false);
        return Vec::new();
    }
    reload(state, &path, text);
    Vec::new()
}

/// A save found `path` changed on disk and wrote nothing: always asked.
pub fn refused(state: &mut State, path: PathBuf, text: String) {
    ask(state, path, text, true);
}

fn ask(state: &mut State, path: PathBuf, text: String, refused_save: bool) {
    state.overlay =
        Overlay::ChangedOutside(Box::new(OutsideChange { path, text, refused_save, diff: None, scroll: 0 }));
}

/// A key on the question: r reloads, k keeps mine (and saves when a save was refused), d shows the
/// difference (↑/↓ scroll it), any other key leaves it for the next save to ask again.
pub fn answer(state: &mut State, mut change: OutsideChange, input: &Input) -> Vec<Effect> {
    match input.key {
        Key::Char('r') => {
            state.overlay = Overlay::None;
            reload(state, &change.path, change.text);
            Vec::new()
        }
        Key::Char('k') => {
            state.overlay = Overlay::None;
            keep_mine(state, &change)
        }
        Key::Char('d') => {
            change.diff = match change.diff {
                Some(_) => None,
                None => Some(difference(&known(state, &change.path).unwrap_or_default(), &change.text)),
            };
            change.scroll = 0;
            state.overlay = Overlay::ChangedOutside(Box::new(change));
            Vec::new()
        }
        Key::Up | Key::Down if change.diff.is_some() => {
            let lines = change.diff.as_ref().map_or(0, Vec::len);
            change.scroll = match input.key {
                Key::Up => change.scroll.saturating_sub(1),
                _ => (change.scroll + 1).min(lines.saturating_sub(1)),
            };
            state.overlay = Overlay::ChangedOutside(Box::new(change));
            Vec::new()
        }
        _ => {
            state.overlay = Overlay::None;
            state.note =
                Some(format!("{} changed on disk: your edits are not saved; ctrl-s asks again", change.path.display()));
            Vec::new()
        }
    }
}

/// The lines of a unified difference from `before` to `after`.
fn difference(before: &str, after: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(before, after);
    let text = diff.unified_diff().context_radius(2).header("as last read or written", "on disk now").to_string();
    text.lines().map(|line| crate::safe_text::escape_controls(line).into_owned()).collect()
}

/// Keeps my edits over the file as it is now: it becomes the base of the next save, and what I did
/// not change takes their version (a text I did not edit, the variables, each case by name: theirs
/// unless I changed it; cases they added stay, cases I added are kept).
fn keep_mine(state: &mut State, change: &OutsideChange) -> Vec<Effect> {
    if change.path == state.path {
        let theirs = match PromptFile::from_toml_str(&change.text, &change.path) {
            Ok(mut prompt) => {
                if let Some(note) = crate::tui::edit::with_dataset(&mut prompt, &change.path) {
                    state.note = Some(note);
                }
                OnDisk { text: change.text.clone(), prompt }
            }
            Err(e) => {
                state.note = Some(format!("cannot keep your edits over it: the file on disk does not read ({e})"));
                return Vec::new();
            }
        };
        let their_schema = match schema_text(&theirs, &change.path) {
            Ok(schema) => schema,
            Err(e) => {
                state.note = Some(format!("cannot keep your edits over it: {e}"));
                return Vec::new();
            }
        };
        let their_texts =
            [theirs.prompt.system.clone().unwrap_or_default(), theirs.prompt.template.clone(), their_schema.0.clone()];
        let mine = state.texts();
        for (at, (mine, (saved, theirs))) in
            mine.iter().zip(state.saved_texts.clone().iter().zip(&their_texts)).enumerate()
        {
            if mine == saved && mine != theirs {
                let editor_at = match at {
                    0 => &mut state.system,
                    1 => &mut state.template,
                    _ => &mut state.schema,
                };
                *editor_at = editor(theirs);
                if at == 2 {
                    state.schema_kind = their_schema.1.clone();
                }
            }
        }
        state.saved_texts = their_texts;
        if state.variables == state.saved.variables {
            state.variables = theirs.prompt.variables.clone();
        }
        state.cases = merge_cases(&state.saved.cases, &state.cases, &theirs.prompt.cases);
        state.saved = theirs.prompt;
        state.saved_text = theirs.text;
        relint(state);
    } else {
        state.saved_texts[2] = change.text.clone();
    }
    crate::tui::edit::recheck(state);
    state.note = Some(format!(
        "keeping your edits: a save writes them over {} as it is now (its other changes stay)",
        change.path.display()
    ));
    if change.refused_save {
        return crate::tui::edit::save(state);
    }
    Vec::new()
}

/// The cases after keeping mine over theirs, from `base` (what both started from): theirs in their
/// order, each replaced by mine where I changed it (a case they changed and I deleted stays), then
/// the cases I added (and those I changed that they deleted).
fn merge_cases(base: &[Case], mine: &[Case], theirs: &[Case]) -> Vec<Case> {
    let by_name =
        |cases: &[Case]| -> HashMap<String, Case> { cases.iter().map(|c| (c.name.clone(), c.clone())).collect() };
    let (base_by, mine_by) = (by_name(base), by_name(mine));
    let their_names: HashSet<&str> = theirs.iter().map(|c| c.name.as_str()).collect();
    let mut merged: Vec<Case> = theirs
        .iter()
        .filter_map(|t| match (base_by.get(&t.name), mine_by.get(&t.name)) {
            (Some(b), Some(m)) => Some(if m == b { t.clone() } else { m.clone() }),
            (Some(b), None) => (t != b).then(|| t.clone()),
            (None, Some(m)) => Some(m.clone()),
            (None, None) => Some(t.clone()),
        })
        .collect();
    merged.extend(
        mine.iter()
            .filter(|m| !their_names.contains(m.name.as_str()))
            .filter(|m| base_by.get(&m.name).is_none_or(|b| b != *m))
            .cloned(),
    );
    merged
}

/// The file's new text into the workbench: the editors, variables and cases of the prompt file, or
/// the schema pane for its schema file. A prompt file that does not read is left for the author.
fn reload(state: &mut State, path: &Path, text: String) {
    if path != state.path {
        state.schema = editor(&text);
        state.saved_texts[2] = text;
        relint(state);
        crate::tui::edit::recheck(state);
        state.note = Some(format!("reloaded {}: it changed on disk", path.display()));
        return;
    }
    let prompt = match PromptFile::from_toml_str(&text, path) {
        Ok(mut prompt) => {
            if let Some(note) = crate::tui::edit::with_dataset(&mut prompt, path) {
                state.note = Some(note);
            }
            prompt
        }
        Err(e) => {
            state.note = Some(format!("{} changed on disk and does not read ({e}); not reloaded", path.display()));
            return;
        }
    };
    let file = OnDisk { text, prompt };
    let (schema, kind) = match schema_text(&file, path) {
        Ok(schema) => schema,
        Err(e) => {
            state.note = Some(format!("{} changed on disk: {e}; not reloaded", path.display()));
            return;
        }
    };
    let system = file.prompt.system.clone().unwrap_or_default();
    let template = file.prompt.template.clone();
    state.system = editor(&system);
    state.template = editor(&template);
    state.schema = editor(&schema);
    state.saved_texts = [system, template, schema];
    state.schema_kind = kind;
    state.variables = file.prompt.variables.clone();
    state.cases = file.prompt.cases.clone();
    state.workbench.case_undo.clear();
    state.saved = file.prompt;
    state.saved_text = file.text;
    state.pending_save = None;
    relint(state);
    crate::tui::edit::recheck(state);
    state.note = Some(format!("reloaded {}: it changed on disk", path.display()));
}
