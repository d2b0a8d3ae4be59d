//! Keys to actions: the default keymap embedded from `keymap.toml`, a user file merged over it, and
//! the rows of the help overlay generated from the result.

use std::collections::BTreeMap;

use ratatui_textarea::{Input, Key};
use serde::Deserialize;

use crate::tui::action::Action;

/// The default keymap (also the documentation of the file format).
pub const DEFAULT_KEYMAP: &str = include_str!("keymap.toml");

/// Where a binding works.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Everywhere, also while typing in an editor.
    Global,
    /// In the panes that are not editors.
    View,
    /// On the eval screen, before the view bindings.
    Eval,
    /// On the optimize screen, before the view bindings.
    Optimize,
}

/// The keymap file as written: per scope, action → keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeymapFile {
    #[serde(default)]
    global: BTreeMap<Action, Vec<String>>,
    #[serde(default)]
    view: BTreeMap<Action, Vec<String>>,
    #[serde(default)]
    eval: BTreeMap<Action, Vec<String>>,
    #[serde(default)]
    optimize: BTreeMap<Action, Vec<String>>,
}

/// Keys resolved to actions.
#[derive(Clone, Debug, PartialEq)]
pub struct Keymap {
    bindings: Vec<(Scope, Input, Action)>,
    /// The keys as written, per scope and action, for the help overlay.
    written: BTreeMap<(Scope, Action), Vec<String>>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::from_toml(DEFAULT_KEYMAP, None).unwrap_or(Keymap { bindings: Vec::new(), written: BTreeMap::new() })
    }
}

impl Keymap {
    /// The keymap of `defaults` with `user` merged over it (the user's actions replace the default keys
    /// of the same action and scope). Errors name the bad action or key.
    pub fn from_toml(defaults: &str, user: Option<&str>) -> Result<Keymap, String> {
        let base: KeymapFile = toml::from_str(defaults).map_err(|e| format!("keymap: {}", e.message()))?;
        let mut written: BTreeMap<(Scope, Action), Vec<String>> = BTreeMap::new();
        let mut add = |file: KeymapFile| {
            for (action, keys) in file.global {
                written.insert((Scope::Global, action), keys);
            }
            for (action, keys) in file.view {
                written.insert((Scope::View, action), keys);
            }
            for (action, keys) in file.eval {
                written.insert((Scope::Eval, action), keys);
            }
            for (action, keys) in file.optimize {
                written.insert((Scope::Optimize, action), keys);
            }
        };
        add(base);
        if let Some(user) = user {
            let file: KeymapFile = toml::from_str(user).map_err(|e| format!("keymap.toml: {}", e.message().trim()))?;
            add(file);
        }
        let mut bindings = Vec::new();
        for ((scope, action), keys) in &written {
            for key in keys {
                let input = parse_key(key).map_err(|e| format!("keymap: {action:?}: {e}"))?;
                bindings.push((*scope, input, *action));
            }
        }
        Ok(Keymap { bindings, written })
    }

    /// The action `input` means in `scope` (global bindings always count; view bindings only in views).
    pub fn action(&self, input: &Input, in_view: bool) -> Option<Action> {
        let input = normalize(input);
        let find = |scope: Scope| {
            self.bindings.iter().find(|(s, key, _)| *s == scope && *key == input).map(|(_, _, action)| *action)
        };
        find(Scope::Global).or_else(|| if in_view { find(Scope::View) } else { None })
    }

    /// The action `input` means on the eval screen: its own bindings first, then as in a view.
    pub fn eval_action(&self, input: &Input) -> Option<Action> {
        let input = normalize(input);
        self.bindings
            .iter()
            .find(|(s, key, _)| *s == Scope::Eval && *key == input)
            .map(|(_, _, action)| *action)
            .or_else(|| self.action(&input, true))
    }

    /// The action `input` means on the optimize screen: its own bindings first, then as in a view.
    pub fn optimize_action(&self, input: &Input) -> Option<Action> {
        let input = normalize(input);
        self.bindings
            .iter()
            .find(|(s, key, _)| *s == Scope::Optimize && *key == input)
            .map(|(_, _, action)| *action)
            .or_else(|| self.action(&input, true))
    }

    /// The keys of `action` in `scope`, as written (`ctrl-s`).
    pub fn keys(&self, scope: Scope, action: Action) -> &[String] {
        self.written.get(&(scope, action)).map_or(&[], Vec::as_slice)
    }

    /// One help row per bound action: scope, keys joined, kebab-case name, description.
    pub fn help_rows(&self) -> Vec<(Scope, String, String, &'static str)> {
        self.written
            .iter()
            .filter(|(_, keys)| !keys.is_empty())
            .map(|((scope, action), keys)| (*scope, keys.join(" "), action_name(*action), describe(*action)))
            .collect()
    }
}

/// The kebab-case name of an action, as the keymap file writes it.
pub fn action_name(action: Action) -> String {
    serde_json::to_value(action).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Chars carry their own shift (`?`, `G`); Shift is only kept for the other keys.
fn normalize(input: &Input) -> Input {
    let mut input = input.clone();
    if let Key::Char(c) = input.key {
        input.shift = false;
        if input.ctrl || input.alt {
            input.key = Key::Char(c.to_ascii_lowercase());
            if c.is_ascii_uppercase() {
                input.shift = true;
            }
        }
    }
    input
}

/// Reads a key as the keymap writes it: modifiers `ctrl-`, `alt-`, `shift-`, then a character or a
/// name (`tab`, `enter`, `esc`, `up`, `pageup`, `f5`, `space`, ...).
pub fn parse_key(text: &str) -> Result<Input, String> {
    let mut input = Input::default();
    let mut rest = text;
    loop {
        if let Some(r) = rest.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
            input.ctrl = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix("alt-").filter(|r| !r.is_empty()) {
            input.alt = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix("shift-").filter(|r| !r.is_empty()) {
            input.shift = true;
            rest = r;
        } else {
            break;
        }
    }
    let mut chars = rest.chars();
    input.key = match (chars.next(), chars.next()) {
        (Some(c), None) => Key::Char(c),
        _ => match rest {
            "tab" => Key::Tab,
            "backtab" => {
                input.shift = true;
                Key::Tab
            }
            "enter" => Key::Enter,
            "esc" => Key::Esc,
            "up" => Key::Up,
            "down" => Key::Down,
            "left" => Key::Left,
            "right" => Key::Right,
            "pageup" => Key::PageUp,
            "pagedown" => Key::PageDown,
            "home" => Key::Home,
            "end" => Key::End,
            "backspace" => Key::Backspace,
            "delete" => Key::Delete,
            "space" => Key::Char(' '),
            f if f.starts_with('f') => match f[1..].parse::<u8>() {
                Ok(n @ 1..=12) => Key::F(n),
                _ => return Err(format!("unknown key {text:?}")),
            },
            _ => return Err(format!("unknown key {text:?}: use a character or tab, enter, esc, up, down, left, right, pageup, pagedown, home, end, backspace, delete, space, f1..f12 with ctrl-/alt-/shift-")),
        },
    };
    Ok(normalize(&input))
}

/// What an action does, for the help overlay.
pub fn describe(action: Action) -> &'static str {
    match action {
        Action::Quit => "quit (asks if edits are unsaved)",
        Action::Save => "save the prompt (atomically)",
        Action::Run => "run the prompt",
        Action::RunOneTurn => "run one turn only (no retry)",
        Action::CancelRun => "cancel run / close overlay",
        Action::FocusNext => "next pane",
        Action::FocusPrev => "previous pane",
        Action::FocusSystem => "system message / preview",
        Action::FocusTemplate => "user template",
        Action::FocusSchema => "schema / signature",
        Action::FocusVariables => "variables and test cases",
        Action::FocusOutput => "streamed output",
        Action::FocusLines => "per-line verdicts",
        Action::FocusTruncation => "truncation: cut, items, chart",
        Action::FocusHistory => "past runs of this prompt",
        Action::ToggleZoom => "zoom the focused pane",
        Action::ToggleHelp => "this help",
        Action::ToggleTokens => "token boundaries in output",
        Action::ToggleProbs => "colour output by probability",
        Action::TogglePreview => "show the rendered request",
        Action::CopyCurl => "copy the request as curl",
        Action::NextProvider => "next provider",
        Action::NextStructured => "next structured-output mode",
        Action::ChooseModel => "pick the model (local: a list)",
        Action::NextCase => "next test case",
        Action::MoreTokens => "double max tokens",
        Action::FewerTokens => "halve max tokens",
        Action::Up => "up / previous",
        Action::Down => "down / next",
        Action::Left => "cut back one chunk",
        Action::Right => "cut forward one chunk",
        Action::PageUp => "page up / cut back ten",
        Action::PageDown => "page down / cut forward ten",
        Action::Home => "first row / cut 0",
        Action::End => "last row, follow the tail / all",
        Action::Open => "replay a past run / pick a case",
        Action::Compare => "json vs jsonl side by side",
        Action::AddCase => "add a case (name, variables)",
        Action::CopyCase => "copy the selected case",
        Action::DeleteCase => "delete the selected case (asks)",
        Action::UndoCaseEdit => "undo the last case/variable change",
        Action::Eval => "eval screen: every case scored",
        Action::Approve => "approve answer as expected",
        Action::Review => "review failing cases (a/r/s)",
        Action::MarkEval => "mark an eval to compare",
        Action::EvalDiff => "diff against the baseline",
        Action::AnswerTruncation => "truncation of a case answer",
        Action::FilterCases => "filter cases by name",
        Action::FilterVerdicts => "filter cases by verdict",
        Action::Optimize => "optimize screen: candidates",
        Action::AcceptCandidate => "candidate into the editors",
        Action::RejectCandidate => "mark rejected (never best)",
        Action::UndoAccept => "undo an accepted candidate",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> Input {
        Input { key: Key::Char(c), ..Input::default() }
    }

    #[test]
    fn defaults_bind_global_and_view_keys() {
        let map = Keymap::default();
        let ctrl_s = Input { key: Key::Char('s'), ctrl: true, ..Input::default() };
        assert_eq!(map.action(&ctrl_s, false), Some(Action::Save));
        assert_eq!(map.action(&key('?'), false), None, "? types in an editor");
        assert_eq!(map.action(&Input { shift: true, ..key('?') }, true), Some(Action::ToggleHelp));
        let back = Input { key: Key::Tab, shift: true, ..Input::default() };
        assert_eq!(map.action(&back, false), Some(Action::FocusPrev));
        assert!(map.help_rows().iter().any(|(_, keys, name, _)| keys == "ctrl-s" && name == "save"));
    }

    #[test]
    fn user_file_replaces_keys_and_bad_names_are_named() {
        let map = Keymap::from_toml(DEFAULT_KEYMAP, Some("[global]\nsave = [\"f2\"]\n")).unwrap();
        let ctrl_s = Input { key: Key::Char('s'), ctrl: true, ..Input::default() };
        assert_eq!(map.action(&ctrl_s, false), None);
        assert_eq!(map.action(&Input { key: Key::F(2), ..Input::default() }, false), Some(Action::Save));
        let error = Keymap::from_toml(DEFAULT_KEYMAP, Some("[global]\nsave = [\"ctrl-banana\"]\n")).unwrap_err();
        assert!(error.contains("\"ctrl-banana\""), "{error}");
        let error = Keymap::from_toml(DEFAULT_KEYMAP, Some("[global]\nfly = [\"f2\"]\n")).unwrap_err();
        assert!(error.contains("fly"), "{error}");
    }
}
