//! Builds the value a [`Scanner`] reads, without recursion, keeping the answer's items (the root
//! array's elements, or those of the root object's `"items"` array, PtcRunner's list wrapper) in a
//! list of their own so a sweep can count them as they complete; materialises the repaired value.
//!
//! For the truncation sweep it also keeps a content clock ([`Builder::clock`]: every value start and
//! every piece of a value string ticks it), counts duplicate keys, and marks where each item completed
//! ([`ItemMark`]): a cut whose clock equals its item's end mark lacks nothing of that item.

use serde_json::{Map, Number, Value};

use super::scan::{Kind, Lit, OpenToken, Scanner, Sink};

/// How the value's items are read (see [`items_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The value is one item (an object without an `"items"` array yet, or a scalar).
    Single,
    /// The value is the items container (a root array) or holds it under `"items"`.
    Items,
}

#[derive(Clone, Debug)]
enum Frame {
    Array(Vec<Value>),
    Object(Map<String, Value>, Option<String>),
    /// The items container; its elements live in [`Builder::items`].
    Items,
}

/// A [`Sink`] that builds the value.
#[derive(Clone, Debug)]
pub struct Builder {
    frames: Vec<Frame>,
    items: Vec<Value>,
    /// Whether to single out the items container (only for a whole answer, not for one element).
    find_items: bool,
    mode: Mode,
    /// The items container is the root object's `"items"` (its key holds a placeholder once closed).
    in_object: bool,
    items_closed: bool,
    /// The completed root object that holds the items (mode `Items`, `in_object`).
    shell: Option<Value>,
    done: bool,
    text: String,
    key: bool,
    open_start: Option<usize>,
    /// The root object got a second `"items"` key: items no longer follow the container.
    irregular: bool,
    trailing_commas: Vec<usize>,
    clock: u64,
    dups: u64,
    last_start: usize,
    marks: Vec<ItemMark>,
    /// The items and marks as they stood when a second `"items"` key moved them into the object.
    moved: Option<(Vec<Value>, Vec<ItemMark>)>,
}

/// The content clock and duplicate-key count when an item completed (one per item of [`Builder::items`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemMark {
    /// Where the item starts.
    pub start: usize,
    pub clock: u64,
    pub dups: u64,
}

impl Builder {
    /// A builder for a whole answer (`find_items`) or for one element.
    pub fn new(find_items: bool) -> Builder {
        Builder {
            frames: Vec::new(),
            items: Vec::new(),
            find_items,
            mode: Mode::Single,
            in_object: false,
            items_closed: false,
            shell: None,
            done: false,
            text: String::new(),
            key: false,
            open_start: None,
            irregular: false,
            trailing_commas: Vec::new(),
            clock: 0,
            dups: 0,
            last_start: 0,
            marks: Vec::new(),
            moved: None,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The completed items: the container's elements so far (mode `Items`), or the root once it is
    /// complete (mode `Single`).
    pub fn items(&self) -> &[Value] {
        &self.items
    }

    /// Where each item of [`Builder::items`] completed.
    pub fn marks(&self) -> &[ItemMark] {
        &self.marks
    }

    /// The items a sweep counted for this candidate, with their marks: [`Builder::items`], or, once a
    /// second `"items"` key moved them into the object, the items as they stood then.
    pub fn counted(&self) -> (&[Value], &[ItemMark]) {
        match &self.moved {
            Some((items, marks)) => (items, marks),
            None => (&self.items, &self.marks),
        }
    }

    /// Takes [`Builder::counted`].
    pub fn take_counted(&mut self) -> (Vec<Value>, Vec<ItemMark>) {
        match self.moved.take() {
            Some(moved) => moved,
            None => (std::mem::take(&mut self.items), std::mem::take(&mut self.marks)),
        }
    }

    /// Ticks at every value start and every piece of a value string: while it stands still, the
    /// repaired value gains nothing (only closing brackets, blanks, keys, number digits can pass).
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// How many times an object key was given a second value.
    pub fn dups(&self) -> u64 {
        self.dups
    }

    /// Where the last value started (for a number in progress: where the number starts).
    pub fn last_start(&self) -> usize {
        self.last_start
    }

    fn mark(&self) -> ItemMark {
        ItemMark { start: self.open_start.unwrap_or(usize::MAX), clock: self.clock, dups: self.dups }
    }

    pub fn done(&self) -> bool {
        self.done
    }

    pub fn irregular(&self) -> bool {
        self.irregular
    }

    /// Byte offsets of the trailing commas skipped.
    pub fn trailing_commas(&self) -> &[usize] {
        &self.trailing_commas
    }

    /// The item in progress: where it starts, how many containers enclose it, and whether a repair
    /// at the current position keeps it (an open container or string, a valid number).
    pub fn open_item(&self, scanner: &Scanner) -> Option<OpenItem> {
        if self.done {
            return None;
        }
        let start = self.open_start?;
        let depth = match self.mode {
            Mode::Single => 0,
            Mode::Items => self.frames.iter().position(|f| matches!(f, Frame::Items))? + 1,
        };
        let kept = self.frames.len() > depth || token_kept(scanner);
        Some(OpenItem { start, depth, kept })
    }

    /// The completed root value.
    pub fn root(&self) -> Option<Value> {
        if !self.done {
            return None;
        }
        match (self.mode, &self.shell) {
            (Mode::Single, _) => self.items.first().cloned(),
            (Mode::Items, None) => Some(Value::Array(self.items.clone())),
            (Mode::Items, Some(shell)) => {
                let mut shell = shell.clone();
                if let Some(map) = shell.as_object_mut() {
                    map.insert("items".into(), Value::Array(self.items.clone()));
                }
                Some(shell)
            }
        }
    }

    /// The value as if the text ended where the scanner stands: the open string closed, a valid
    /// number kept, an incomplete tail (dangling key, `:`, partial literal or number) dropped, and
    /// every open container closed. `None` when nothing is kept.
    pub fn materialise(&self, scanner: &Scanner) -> Option<Value> {
        if self.done {
            return self.root();
        }
        self.close_frames(0, open_token_value(&self.text, scanner))
    }

    /// The item in progress as a repair at the scanner's position gives it (what [`Builder::materialise`]
    /// would hold in that item's place), `None` when nothing is kept or no item is in progress.
    pub fn materialise_item(&self, scanner: &Scanner) -> Option<Value> {
        let open = self.open_item(scanner)?;
        match self.mode {
            Mode::Single => self.materialise(scanner),
            Mode::Items => self.close_frames(open.depth, open_token_value(&self.text, scanner)),
        }
    }

    /// Closes the frames from `from` on around `current` (the kept token in progress, if any).
    fn close_frames(&self, from: usize, mut current: Option<Value>) -> Option<Value> {
        for (depth, frame) in self.frames.iter().enumerate().skip(from).rev() {
            current = Some(match frame {
                Frame::Array(values) => {
                    let mut values = values.clone();
                    values.extend(current);
                    Value::Array(values)
                }
                Frame::Object(map, key) => {
                    let mut map = map.clone();
                    if let (Some(key), Some(value)) = (key, current) {
                        map.insert(key.clone(), value);
                    }
                    if depth == 0 && self.in_object && self.items_closed && !self.irregular {
                        map.insert("items".into(), Value::Array(self.items.clone()));
                    }
                    Value::Object(map)
                }
                Frame::Items => {
                    let mut values = self.items.clone();
                    values.extend(current);
                    Value::Array(values)
                }
            });
        }
        current
    }

    fn attach(&mut self, value: Value) {
        match self.frames.last_mut() {
            None => {
                let mark = self.mark();
                self.done = true;
                self.open_start = None;
                match (self.mode, self.in_object) {
                    (Mode::Single, _) => {
                        self.items.push(value);
                        self.marks.push(mark);
                    }
                    (Mode::Items, true) => self.shell = Some(value),
                    (Mode::Items, false) => {}
                }
            }
            Some(Frame::Array(values)) => values.push(value),
            Some(Frame::Object(map, key)) => {
                if let Some(key) = key.take() {
                    if map.insert(key, value).is_some() {
                        self.dups += 1;
                    }
                }
            }
            Some(Frame::Items) => {
                self.items.push(value);
                self.marks.push(self.mark());
                self.open_start = None;
            }
        }
    }

    /// A second `"items"` key at the root: the container's elements go back into the object.
    fn second_items_key(&mut self) {
        self.irregular = true;
        if self.mode == Mode::Items {
            let items = std::mem::take(&mut self.items);
            self.moved = Some((items.clone(), std::mem::take(&mut self.marks)));
            if let Some(Frame::Object(map, _)) = self.frames.first_mut() {
                map.insert("items".into(), Value::Array(items));
            }
            self.mode = Mode::Single;
            self.in_object = false;
        }
    }
}

/// The token in progress as a repair keeps it: the open value string closed, a valid number.
fn open_token_value(text: &str, scanner: &Scanner) -> Option<Value> {
    match scanner.open_token() {
        OpenToken::ValueString { .. } => Some(Value::String(text.to_owned())),
        OpenToken::Number { valid: true } => parse_number(scanner.number_text()),
        _ => None,
    }
}

/// Whether a repair keeps the token in progress: an open value string, or a valid number that is in
/// range (`1e400` is dropped, as a complete one is an error).
pub fn token_kept(scanner: &Scanner) -> bool {
    match scanner.open_token() {
        OpenToken::ValueString { .. } => true,
        OpenToken::Number { valid: true } => parse_number(scanner.number_text()).is_some(),
        _ => false,
    }
}

/// Where the item in progress starts, how many containers enclose it, whether a repair keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenItem {
    pub start: usize,
    pub depth: usize,
    pub kept: bool,
}

impl Sink for Builder {
    fn value_start(&mut self, at: usize, depth: usize) {
        self.clock += 1;
        self.last_start = at;
        let in_items = depth > 0 && self.frames.len() == depth && matches!(self.frames.last(), Some(Frame::Items));
        if depth == 0 || in_items {
            self.open_start = Some(at);
        }
    }

    fn open(&mut self, kind: Kind) {
        let items_container = self.find_items
            && kind == Kind::Array
            && self.mode == Mode::Single
            && !self.irregular
            && match self.frames.as_slice() {
                [] => true,
                [Frame::Object(_, Some(key))] => key == "items",
                _ => false,
            };
        if items_container {
            self.mode = Mode::Items;
            self.in_object = !self.frames.is_empty();
            self.open_start = None;
            self.frames.push(Frame::Items);
        } else if kind == Kind::Array {
            self.frames.push(Frame::Array(Vec::new()));
        } else {
            self.frames.push(Frame::Object(Map::new(), None));
        }
    }

    fn close(&mut self) {
        let value = match self.frames.pop() {
            Some(Frame::Array(values)) => Value::Array(values),
            Some(Frame::Object(map, _)) => Value::Object(map),
            Some(Frame::Items) => {
                self.items_closed = true;
                Value::Array(Vec::new())
            }
            None => return,
        };
        self.attach(value);
    }

    fn string_start(&mut self, key: bool) {
        self.text.clear();
        self.key = key;
    }

    fn string_part(&mut self, part: &str) {
        self.clock += u64::from(!self.key);
        self.text.push_str(part);
    }

    fn string_end(&mut self) {
        // A copy of exactly the string's size; the buffer stays for the next string (a string fed in
        // many small pieces grows it once, not once per string).
        let text = self.text.as_str().to_owned();
        self.text.clear();
        if !self.key {
            self.attach(Value::String(text));
            return;
        }
        let root_items_again = self.find_items
            && self.frames.len() == 1
            && text == "items"
            && (self.mode == Mode::Items
                || matches!(self.frames.first(), Some(Frame::Object(m, _)) if m.contains_key("items")));
        if root_items_again {
            self.second_items_key();
        }
        if let Some(Frame::Object(_, key)) = self.frames.last_mut() {
            *key = Some(text);
        }
    }

    fn number(&mut self, text: &str) -> bool {
        match parse_number(text) {
            Some(value) => {
                self.attach(value);
                true
            }
            None => false,
        }
    }

    fn literal(&mut self, lit: Lit) {
        self.attach(lit_value(lit));
    }

    fn trailing_comma(&mut self, at: usize) {
        self.trailing_commas.push(at);
    }
}

/// The value of a literal; Python's `NaN`/`Infinity`/`-Infinity` have none in JSON, so `null`.
pub fn lit_value(lit: Lit) -> Value {
    match lit {
        Lit::True => Value::Bool(true),
        Lit::False => Value::Bool(false),
        Lit::Null | Lit::NaN | Lit::Infinity | Lit::NegInfinity => Value::Null,
    }
}

/// A valid RFC 8259 number as serde_json represents it (u64, i64, else f64; `-0` is `-0.0`);
/// `None` when it is out of range (`1e400`).
pub fn parse_number(text: &str) -> Option<Value> {
    let plain = !text.contains(['.', 'e', 'E']);
    if plain && text.len() <= 19 {
        if let Some(digits) = text.strip_prefix('-') {
            if let Ok(n) = digits.parse::<i64>() {
                if n != 0 {
                    return Some(Value::Number(Number::from(-n)));
                }
            }
        } else if let Ok(n) = text.parse::<u64>() {
            return Some(Value::Number(Number::from(n)));
        }
    }
    serde_json::from_str::<Value>(text).ok().filter(Value::is_number)
}

/// The items of a value as the sweep counts them: an array's elements, the elements of the array
/// under `"items"` of an object (PtcRunner's list wrapper), else the value itself as one item.
pub fn items_of(value: Value) -> Vec<Value> {
    match value {
        Value::Array(values) => values,
        Value::Object(mut map) if map.get("items").is_some_and(Value::is_array) => match map.remove("items") {
            Some(Value::Array(values)) => values,
            _ => Vec::new(),
        },
        other => vec![other],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::scan::Grammar;
    use serde_json::json;

    fn built(text: &str) -> (Scanner, Builder) {
        let mut scanner = Scanner::new(Grammar::LENIENT, 0);
        let mut builder = Builder::new(true);
        scanner.feed(text, &mut builder);
        (scanner, builder)
    }

    #[test]
    fn the_clock_ticks_on_content_only() {
        let clock = |text: &str| built(text).1.clock();
        // `[`, the object, the string value's start and its piece.
        assert_eq!(clock(r#"[{"key": "v"#), 4);
        // The closing quote, brackets, blanks, a key and a comma add no content.
        assert_eq!(clock(r#"[{"key": "v"} ,"#), 4);
        assert_eq!(clock(r#"[{"key": "v"}, {"other"#), 5);
        // Number digits do not tick (a sweep compares numbers by value).
        assert_eq!(clock("[12"), clock("[1"));
    }

    #[test]
    fn items_are_marked_where_they_complete() {
        let (_, builder) = built(r#"[{"a": 1, "a": 2}, "x"]"#);
        assert_eq!(builder.items(), [json!({"a": 2}), json!("x")]);
        let marks = builder.marks();
        assert_eq!(marks.iter().map(|m| (m.start, m.dups)).collect::<Vec<_>>(), [(1, 1), (19, 1)]);
        assert!(marks[0].clock < marks[1].clock);
        let (_, single) = built(r#" {"a": [1]}"#);
        assert_eq!(single.marks().iter().map(|m| m.start).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn materialise_item_gives_the_item_in_progress_only() {
        let (scanner, builder) = built(r#"{"items": [{"a": 1}, {"b": [2, "t"#);
        assert_eq!(builder.materialise_item(&scanner), Some(json!({"b": [2, "t"]})));
        assert_eq!(builder.materialise(&scanner), Some(json!({"items": [{"a": 1}, {"b": [2, "t"]}]})));
        let (scanner, builder) = built(r#"[{"a": 1}, tr"#);
        assert_eq!(builder.materialise_item(&scanner), None);
        let (scanner, builder) = built(r#"{"a": "x"#);
        assert_eq!(builder.materialise_item(&scanner), Some(json!({"a": "x"})));
    }
}
