//! An editor pane's text: a ratatui-textarea widget holding it, and for a very large text only a
//! window of it around the cursor. The widget measures its whole text again after every edit (its
//! screen map: the width of every character), so a key in a 7.6 MB schema cost about 40 ms however
//! little changed; a window of [`WINDOW_BYTES`] keeps that cost flat. The window moves with the
//! cursor: when the cursor comes within [`MARGIN_LINES`] of its edge and there is more text beyond,
//! the window is cut again around it (the widget's undo history starts afresh then). A text under
//! [`WINDOW_LIMIT`] is held whole, as before.

use ratatui_textarea::{CursorMove, Input, Key, TextArea, WrapMode};

/// From this size (in bytes) a text is edited through a window.
pub const WINDOW_LIMIT: usize = 1024 * 1024;
/// About this many bytes of text are held in the window on each side of the cursor.
pub const WINDOW_BYTES: usize = 128 * 1024;
/// At most this many lines on each side of the cursor (the widget jumps by `u16` rows).
const WINDOW_LINES: usize = 16_000;
/// How close (in lines) the cursor may come to the window's edge before the window moves.
pub const MARGIN_LINES: usize = 400;

/// The longest text an editor soft-wraps, in bytes. The editor widget wraps its whole text again
/// after every edit (at words, by Unicode's rules): a key in a 7 MB schema took 400 ms for that
/// alone. Past this size long lines run off the pane's edge instead, and a key stays cheap.
pub const WRAP_LIMIT: usize = 256 * 1024;

/// One editor's text.
#[derive(Clone, Debug)]
pub struct Editor {
    area: TextArea<'static>,
    /// The lines before the window, in order.
    above: Vec<String>,
    /// The lines after the window, last line first (the line right after the window is at the end).
    below: Vec<String>,
    /// The bytes of `above` and `below`, newlines included.
    outside_bytes: usize,
}

impl Default for Editor {
    fn default() -> Self {
        Editor::new("")
    }
}

impl PartialEq for Editor {
    fn eq(&self, other: &Self) -> bool {
        self.lines().eq(other.lines()) && self.cursor() == other.cursor()
    }
}

impl Editor {
    /// An editor holding `text` (the cursor at its start).
    pub fn new(text: &str) -> Editor {
        let lines: Vec<String> =
            if text.is_empty() { vec![String::new()] } else { text.split('\n').map(str::to_string).collect() };
        let mut editor = Editor { area: new_area(Vec::new()), above: Vec::new(), below: Vec::new(), outside_bytes: 0 };
        if text.len() >= WINDOW_LIMIT {
            // The window starts at the top: everything else waits below.
            let mut lines = lines;
            let mut kept = 0;
            let mut bytes = 0;
            while kept < lines.len() && kept < WINDOW_LINES && bytes < 2 * WINDOW_BYTES {
                bytes += lines[kept].len() + 1;
                kept += 1;
            }
            let rest = lines.split_off(kept.max(1));
            editor.outside_bytes = rest.iter().map(|l| l.len() + 1).sum();
            editor.below = rest.into_iter().rev().collect();
            editor.area = new_area(lines);
        } else {
            editor.area = new_area(lines);
        }
        editor.fit_wrap();
        editor
    }

    /// The widget, to draw (it holds the window when the text is large).
    pub fn area(&self) -> &TextArea<'static> {
        &self.area
    }

    /// The widget, to move its cursor or scroll it; [`Editor::settle`] after a move that may reach
    /// the window's edge.
    pub fn area_mut(&mut self) -> &mut TextArea<'static> {
        &mut self.area
    }

    /// Every line of the text, in order.
    pub fn lines(&self) -> impl Iterator<Item = &String> + '_ {
        self.above.iter().chain(self.area.lines()).chain(self.below.iter().rev())
    }

    /// The whole text.
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.bytes());
        for (index, line) in self.lines().enumerate() {
            if index > 0 {
                text.push('\n');
            }
            text.push_str(line);
        }
        text
    }

    /// The text's size in bytes (a newline after every line but the last).
    pub fn bytes(&self) -> usize {
        let window: usize = self.area.lines().iter().map(|l| l.len() + 1).sum();
        (self.outside_bytes + window).saturating_sub(1)
    }

    /// Whether the text is `text`, compared in place (no copy of a large text is made).
    pub fn is(&self, text: &str) -> bool {
        let mut rest = text;
        for (index, line) in self.lines().enumerate() {
            if index > 0 {
                let Some(after) = rest.strip_prefix('\n') else { return false };
                rest = after;
            }
            let Some(after) = rest.strip_prefix(line.as_str()) else { return false };
            rest = after;
        }
        rest.is_empty()
    }

    /// The cursor as (line, character) in the whole text.
    pub fn cursor(&self) -> (usize, usize) {
        let ratatui_textarea::DataCursor(row, col) = self.area.cursor();
        (self.above.len() + row, col)
    }

    /// A key typed into the editor; whether it changed the text.
    pub fn input(&mut self, input: Input) -> bool {
        match to_text_end(&input) {
            Some(End::Start) if !self.above.is_empty() => self.recut(0, 0, false),
            Some(End::Finish) if !self.below.is_empty() => {
                let last = self.above.len() + self.area.lines().len() + self.below.len() - 1;
                // The widget shows the last line at the pane's foot, as it does for a whole text.
                self.recut(last, 0, false);
            }
            _ => {}
        }
        let changed = self.area.input(input);
        self.settle();
        changed
    }

    /// Text pasted at the cursor.
    pub fn insert_str(&mut self, text: &str) {
        self.area.insert_str(text);
        self.fit_wrap();
        self.settle();
    }

    /// Moves the window when the cursor came near its edge with text beyond it, or when the window
    /// grew past twice its size (a paste).
    pub fn settle(&mut self) {
        let ratatui_textarea::DataCursor(row, _) = self.area.cursor();
        let window = self.area.lines().len();
        let near_top = row < MARGIN_LINES && !self.above.is_empty();
        let near_bottom = row + MARGIN_LINES >= window && !self.below.is_empty();
        let grown = window > 2 * WINDOW_LINES + 1 || self.window_bytes() > 4 * WINDOW_BYTES;
        if near_top || near_bottom || (grown && self.bytes() >= WINDOW_LIMIT) {
            let (line, col) = self.cursor();
            self.recut(line, col, true);
        }
    }

    fn window_bytes(&self) -> usize {
        self.area.lines().iter().map(|l| l.len() + 1).sum()
    }

    /// Cuts the window again around `line` of the whole text, the cursor at (`line`, `col`), keeping
    /// the cursor's place on screen when `stay`.
    fn recut(&mut self, line: usize, col: usize, stay: bool) {
        let (top, _) = self.area.scroll_offset();
        let screen_row = self.area.cursor().0.saturating_sub(usize::from(top));
        let wrap = self.area.wrap_mode();
        let mut window: std::collections::VecDeque<String> =
            std::mem::replace(&mut self.area, new_area(Vec::new())).into_lines().into();
        // The window spans lines first..first + window.len() of the whole text.
        let mut first = self.above.len();
        let line = line.min(first + window.len() + self.below.len() - 1);
        // Bring the cursor's line into the window.
        while line < first {
            let Some(l) = self.above.pop() else { break };
            self.outside_bytes -= l.len() + 1;
            window.push_front(l);
            first -= 1;
        }
        while line >= first + window.len() {
            let Some(l) = self.below.pop() else { break };
            self.outside_bytes -= l.len() + 1;
            window.push_back(l);
        }
        let mut row = line.saturating_sub(first).min(window.len().saturating_sub(1));
        // Above the cursor: grow to the wanted size, then give back what is beyond it.
        let mut before: usize = window.iter().take(row).map(|l| l.len() + 1).sum();
        while before < WINDOW_BYTES && row < WINDOW_LINES {
            let Some(l) = self.above.pop() else { break };
            self.outside_bytes -= l.len() + 1;
            before += l.len() + 1;
            window.push_front(l);
            row += 1;
        }
        while row > 0 && (row > WINDOW_LINES || before - (window[0].len() + 1) >= WINDOW_BYTES) {
            let Some(l) = window.pop_front() else { break };
            before -= l.len() + 1;
            self.outside_bytes += l.len() + 1;
            self.above.push(l);
            row -= 1;
        }
        // Below the cursor, the same.
        let mut after: usize = window.iter().skip(row + 1).map(|l| l.len() + 1).sum();
        while after < WINDOW_BYTES && window.len() - row - 1 < WINDOW_LINES {
            let Some(l) = self.below.pop() else { break };
            self.outside_bytes -= l.len() + 1;
            after += l.len() + 1;
            window.push_back(l);
        }
        while window.len() > row + 1 {
            let last = window.len() - 1;
            if window.len() - row - 1 <= WINDOW_LINES && after - (window[last].len() + 1) < WINDOW_BYTES {
                break;
            }
            let Some(l) = window.pop_back() else { break };
            after -= l.len() + 1;
            self.outside_bytes += l.len() + 1;
            self.below.push(l);
        }
        let mut area = new_area(window.into());
        area.set_wrap_mode(wrap);
        let jump = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        // The cursor stays where it was on screen: the viewport's top follows it.
        let mut top = if stay { row.saturating_sub(screen_row) } else { 0 };
        while top > 0 {
            let step = top.min(i16::MAX as usize);
            area.scroll((step as i16, 0));
            top -= step;
        }
        area.move_cursor(CursorMove::Jump(jump(row), jump(col)));
        self.area = area;
    }

    /// Soft-wraps the text unless it is longer than [`WRAP_LIMIT`] (when it is made or pasted into).
    pub fn fit_wrap(&mut self) {
        let mut size = self.outside_bytes;
        let long = size > WRAP_LIMIT
            || self.area.lines().iter().any(|line| {
                size += line.len() + 1;
                size > WRAP_LIMIT
            });
        let mode = if long { WrapMode::None } else { WrapMode::WordOrGlyph };
        if self.area.wrap_mode() != mode {
            self.area.set_wrap_mode(mode);
        }
    }
}

/// A widget holding the whole of `text` (a box editor's), soft-wrapped unless it is longer than
/// [`WRAP_LIMIT`].
pub fn area_of(text: &str) -> TextArea<'static> {
    let mut editor = Editor { area: new_area(text.split('\n').map(str::to_string).collect()), ..Editor::default() };
    editor.fit_wrap();
    editor.area
}

/// A widget holding `lines`, with the workbench's undo depth.
fn new_area(lines: Vec<String>) -> TextArea<'static> {
    let mut area = TextArea::new(if lines.is_empty() { vec![String::new()] } else { lines });
    area.set_max_histories(200);
    area
}

/// The ends of the text a key jumps to.
enum End {
    Start,
    Finish,
}

/// Whether `input` is one of the widget's jumps to the first or last line (alt-< / alt->,
/// ctrl-alt-up / ctrl-alt-down, ctrl-alt-p / ctrl-alt-n): they must reach the text's ends, not the
/// window's.
fn to_text_end(input: &Input) -> Option<End> {
    match (input.key, input.ctrl, input.alt) {
        (Key::Char('<'), false, true) | (Key::Up | Key::Char('p'), true, true) => Some(End::Start),
        (Key::Char('>'), false, true) | (Key::Down | Key::Char('n'), true, true) => Some(End::Finish),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn large(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("line {i:06} of a large text, long enough to matter for bytes"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn key(key: Key) -> Input {
        Input { key, ..Input::default() }
    }

    #[test]
    fn a_small_text_is_held_whole_and_reads_back() {
        let editor = Editor::new("a\nb\n");
        assert_eq!(editor.area().lines(), ["a", "b", ""]);
        assert_eq!(editor.text(), "a\nb\n");
        assert!(editor.is("a\nb\n") && !editor.is("a\nb"));
        assert_eq!(editor.bytes(), 4);
    }

    #[test]
    fn a_large_text_is_windowed_and_every_edit_lands_where_the_cursor_is() {
        let text = large(40_000);
        assert!(text.len() > WINDOW_LIMIT);
        let mut editor = Editor::new(&text);
        assert!(editor.area().lines().len() < 10_000, "a window, not the whole text");
        assert!(editor.is(&text));
        assert_eq!(editor.bytes(), text.len());
        // Down through the whole text, typing a mark every 997 lines.
        let mut expected: Vec<String> = text.split('\n').map(str::to_string).collect();
        for (line, text) in expected.iter_mut().enumerate() {
            assert_eq!(editor.cursor(), (line, 0), "the cursor moved one line at a time");
            if line % 997 == 0 {
                assert!(editor.input(key(Key::Char('#'))));
                text.insert(0, '#');
                editor.input(key(Key::Left));
            }
            editor.input(key(Key::Down));
        }
        assert_eq!(editor.text(), expected.join("\n"));
        assert!(editor.above.len() > 30_000, "the window moved down with the cursor");
        // Back to the start in one key, and to the end in one.
        editor.input(Input { key: Key::Char('<'), alt: true, ..Input::default() });
        assert_eq!(editor.cursor(), (0, 0));
        editor.input(Input { key: Key::Char('>'), alt: true, ..Input::default() });
        assert_eq!(editor.cursor().0, expected.len() - 1);
        assert_eq!(editor.text(), expected.join("\n"), "moving the window changed no text");
    }

    #[test]
    fn a_large_paste_is_windowed_and_the_text_stays_whole() {
        let mut editor = Editor::new("before\nafter");
        editor.area_mut().move_cursor(CursorMove::Down);
        let pasted = large(30_000) + "\n";
        editor.insert_str(&pasted);
        assert!(editor.area().lines().len() < 20_000, "the paste was cut into a window");
        assert_eq!(editor.text(), format!("before\n{pasted}after"));
        assert_eq!(editor.area().wrap_mode(), WrapMode::None);
        // Upwards, the window follows the cursor too.
        for _ in 0..30_000 {
            editor.input(key(Key::Up));
        }
        assert_eq!(editor.cursor(), (1, 0));
        assert_eq!(editor.text(), format!("before\n{pasted}after"));
    }
}
