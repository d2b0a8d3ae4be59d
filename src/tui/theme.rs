//! Themes: named semantic slots (`valid`, `invalid`, `token_alt`, ...) read from `themes/*.toml`
//! (dark, light and mono embedded), a user theme file merged over them, and `NO_COLOR` respected.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// The embedded themes, by name.
pub const THEMES: [(&str, &str); 3] = [
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("mono", include_str!("../../themes/mono.toml")),
];

/// One slot as a theme file writes it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotFile {
    fg: Option<String>,
    bg: Option<String>,
    #[serde(default)]
    bold: bool,
    #[serde(default)]
    dim: bool,
    #[serde(default)]
    italic: bool,
    #[serde(default)]
    underline: bool,
    #[serde(default)]
    reversed: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    /// A user file may start from an embedded theme.
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    slots: BTreeMap<String, SlotFile>,
}

/// The styles the panes use, by meaning.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    pub text: Style,
    pub dim: Style,
    pub border: Style,
    pub border_focused: Style,
    pub title: Style,
    pub valid: Style,
    pub invalid: Style,
    pub schema_error: Style,
    pub skipped: Style,
    pub token_alt: Style,
    pub selection: Style,
    pub highlight: Style,
    pub cut: Style,
    pub status: Style,
    pub status_warn: Style,
    pub warning: Style,
    pub error: Style,
    pub series_json: Style,
    pub series_repair: Style,
    pub series_jsonl: Style,
    /// Output tokens by probability (the probability toggle): 90% or more, 50–90%, 20–50%, under 20%,
    /// and tokens the grammar forced.
    pub prob_high: Style,
    pub prob_mid: Style,
    pub prob_low: Style,
    pub prob_very_low: Style,
    pub prob_forced: Style,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::named("dark").unwrap_or_else(|_| Theme::blank("dark"))
    }
}

impl Theme {
    fn blank(name: &str) -> Theme {
        let s = Style::default();
        Theme {
            name: name.into(),
            text: s,
            dim: s,
            border: s,
            border_focused: s,
            title: s,
            valid: s,
            invalid: s,
            schema_error: s,
            skipped: s,
            token_alt: s,
            selection: s,
            highlight: s,
            cut: s,
            status: s,
            status_warn: s,
            warning: s,
            error: s,
            series_json: s,
            series_repair: s,
            series_jsonl: s,
            prob_high: s,
            prob_mid: s,
            prob_low: s,
            prob_very_low: s,
            prob_forced: s,
        }
    }

    /// An embedded theme by name (`dark`, `light`, `mono`).
    pub fn named(name: &str) -> Result<Theme, String> {
        let text = THEMES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).ok_or_else(|| {
            format!("unknown theme {name:?}: use dark, light or mono (or a theme.toml in the config directory)")
        })?;
        Theme::blank(name).merged(text, "themes/".to_string() + name + ".toml")
    }

    /// A user theme file: `base` (an embedded theme, default dark) with the file's slots over it.
    pub fn from_user_file(text: &str, origin: &str) -> Result<Theme, String> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| format!("{origin}: {}", e.message().trim()))?;
        let base = Theme::named(file.base.as_deref().unwrap_or("dark"))?;
        base.merged(text, origin.to_string())
    }

    fn merged(mut self, text: &str, origin: String) -> Result<Theme, String> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| format!("{origin}: {}", e.message().trim()))?;
        if let Some(name) = file.name {
            self.name = name;
        }
        for (slot, style) in file.slots {
            let style = to_style(&style).map_err(|e| format!("{origin}: slot {slot}: {e}"))?;
            *self.slot_mut(&slot).ok_or_else(|| format!("{origin}: unknown slot {slot:?}"))? = style;
        }
        Ok(self)
    }

    fn slot_mut(&mut self, slot: &str) -> Option<&mut Style> {
        Some(match slot {
            "text" => &mut self.text,
            "dim" => &mut self.dim,
            "border" => &mut self.border,
            "border_focused" => &mut self.border_focused,
            "title" => &mut self.title,
            "valid" => &mut self.valid,
            "invalid" => &mut self.invalid,
            "schema_error" => &mut self.schema_error,
            "skipped" => &mut self.skipped,
            "token_alt" => &mut self.token_alt,
            "selection" => &mut self.selection,
            "highlight" => &mut self.highlight,
            "cut" => &mut self.cut,
            "status" => &mut self.status,
            "status_warn" => &mut self.status_warn,
            "warning" => &mut self.warning,
            "error" => &mut self.error,
            "series_json" => &mut self.series_json,
            "series_repair" => &mut self.series_repair,
            "series_jsonl" => &mut self.series_jsonl,
            "prob_high" => &mut self.prob_high,
            "prob_mid" => &mut self.prob_mid,
            "prob_low" => &mut self.prob_low,
            "prob_very_low" => &mut self.prob_very_low,
            "prob_forced" => &mut self.prob_forced,
            _ => return None,
        })
    }

    /// The same theme with every colour removed (`NO_COLOR`): modifiers stay, so verdicts still differ.
    pub fn without_colors(mut self) -> Theme {
        for slot in [
            "text",
            "dim",
            "border",
            "border_focused",
            "title",
            "valid",
            "invalid",
            "schema_error",
            "skipped",
            "token_alt",
            "selection",
            "highlight",
            "cut",
            "status",
            "status_warn",
            "warning",
            "error",
            "series_json",
            "series_repair",
            "series_jsonl",
            "prob_high",
            "prob_mid",
            "prob_low",
            "prob_very_low",
            "prob_forced",
        ] {
            if let Some(style) = self.slot_mut(slot) {
                style.fg = None;
                style.bg = None;
                style.underline_color = None;
            }
        }
        let mono = Theme::named("mono").unwrap_or_else(|_| Theme::blank("mono"));
        // Slots that only differ by colour take mono's modifiers.
        for (mine, theirs) in [
            (&mut self.token_alt, mono.token_alt),
            (&mut self.selection, mono.selection),
            (&mut self.status, mono.status),
            (&mut self.invalid, mono.invalid),
            (&mut self.schema_error, mono.schema_error),
            (&mut self.prob_mid, mono.prob_mid),
            (&mut self.prob_low, mono.prob_low),
            (&mut self.prob_very_low, mono.prob_very_low),
            (&mut self.prob_forced, mono.prob_forced),
        ] {
            *mine = theirs;
        }
        self
    }
}

fn to_style(slot: &SlotFile) -> Result<Style, String> {
    let color = |text: &Option<String>| -> Result<Option<Color>, String> {
        text.as_deref()
            .map(|t| t.parse::<Color>().map_err(|_| format!("colour {t:?} is not a colour name or #rrggbb")))
            .transpose()
    };
    let mut style = Style::default();
    if let Some(fg) = color(&slot.fg)? {
        style = style.fg(fg);
    }
    if let Some(bg) = color(&slot.bg)? {
        style = style.bg(bg);
    }
    for (on, modifier) in [
        (slot.bold, Modifier::BOLD),
        (slot.dim, Modifier::DIM),
        (slot.italic, Modifier::ITALIC),
        (slot.underline, Modifier::UNDERLINED),
        (slot.reversed, Modifier::REVERSED),
    ] {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    Ok(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_themes_load_and_no_color_strips_colours() {
        for (name, _) in THEMES {
            let theme = Theme::named(name).unwrap();
            let plain = theme.without_colors();
            assert!(plain.valid.fg.is_none() && plain.token_alt.bg.is_none(), "{name}");
            assert_ne!(plain.valid, plain.invalid, "{name}: verdicts differ without colour");
        }
        assert_eq!(Theme::named("dark").unwrap().valid.fg, Some(Color::Green));
    }

    #[test]
    fn user_theme_errors_name_the_slot() {
        let error = Theme::from_user_file("[slots]\nvalid = { fg = \"greenish\" }", "theme.toml").unwrap_err();
        assert!(error.contains("valid") && error.contains("greenish"), "{error}");
        let error = Theme::from_user_file("[slots]\nshiny = {}", "theme.toml").unwrap_err();
        assert!(error.contains("shiny"), "{error}");
        let light = Theme::from_user_file("base = \"light\"\n[slots]\ncut = { bold = true }", "t").unwrap();
        assert_eq!(light.cut, Style::default().add_modifier(Modifier::BOLD));
    }
}
