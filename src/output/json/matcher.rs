//! Compares a value AS IT IS BEING READ with a reference value, incrementally: after any byte,
//! [`Matcher::verdict`] says whether the repaired prefix (see `Builder::materialise`) would be kept
//! and whether it would equal the reference, in time proportional to the nesting depth, with no
//! value built. This is what lets a truncation sweep count corrupt items at every cut in one pass.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use super::build::{lit_value, parse_number, token_kept};
use super::scan::{Kind, Lit, OpenToken, Scanner, Sink};

#[derive(Debug)]
struct Frame<'r> {
    /// The reference container at this place, if the path exists and the kind agrees.
    target: Option<&'r Value>,
    /// Every completed child equals its reference.
    ok: bool,
    /// Completed children (pairs for an object).
    count: usize,
    key: Option<String>,
    /// FNV-1a hashes of the keys seen (a collision only sends the caller to the exact comparison).
    keys: HashSet<u64, BuildHasherDefault<Identity>>,
}

/// The keys are hashed already.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0 = bytes.iter().fold(self.0, |hash, &byte| hash.rotate_left(8) ^ u64::from(byte));
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// A [`Sink`] that follows the scanner against `reference`.
#[derive(Debug)]
pub struct Matcher<'r> {
    reference: Option<&'r Value>,
    frames: Vec<Frame<'r>>,
    key_text: String,
    in_key: bool,
    string_target: Option<&'r str>,
    string_len: usize,
    string_ok: bool,
    root: Option<bool>,
    duplicate_key: bool,
}

fn len(value: &Value) -> usize {
    match value {
        Value::Array(values) => values.len(),
        Value::Object(map) => map.len(),
        _ => 0,
    }
}

impl<'r> Matcher<'r> {
    /// A matcher against `reference` (`None`: nothing to equal, every kept prefix differs).
    pub fn new(reference: Option<&'r Value>) -> Matcher<'r> {
        Matcher {
            reference,
            frames: Vec::new(),
            key_text: String::new(),
            in_key: false,
            string_target: None,
            string_len: 0,
            string_ok: false,
            root: None,
            duplicate_key: false,
        }
    }

    /// An object repeated a key: equality can no longer be followed here (the caller compares values).
    pub fn lost(&self) -> bool {
        self.duplicate_key
    }

    /// The reference for the value starting now.
    fn child_target(&self) -> Option<&'r Value> {
        let Some(frame) = self.frames.last() else { return self.reference };
        let target = frame.target?;
        match target {
            Value::Array(values) => values.get(frame.count),
            Value::Object(map) => map.get(frame.key.as_deref()?),
            _ => None,
        }
    }

    fn child_done(&mut self, equal: bool) {
        match self.frames.last_mut() {
            None => self.root = Some(equal),
            Some(frame) => {
                frame.ok &= equal;
                frame.count += 1;
            }
        }
    }

    /// Whether a repair of the text read so far keeps a value, and whether that value equals the
    /// reference. `scanner` is the scanner that fed this matcher.
    pub fn verdict(&self, scanner: &Scanner) -> (bool, bool) {
        if let Some(equal) = self.root {
            return (true, equal);
        }
        let token = scanner.open_token();
        let mut kept = token_kept(scanner);
        let mut equal = match token {
            OpenToken::ValueString { .. } => {
                self.string_ok && self.string_target.is_some_and(|target| target.len() == self.string_len)
            }
            OpenToken::Number { valid: true } => {
                let target = self.child_target();
                target.is_some() && parse_number(scanner.number_text()).as_ref() == target
            }
            _ => false,
        };
        for frame in self.frames.iter().rev() {
            equal = frame
                .target
                .is_some_and(|target| frame.ok && frame.count + usize::from(kept) == len(target) && (!kept || equal));
            kept = true;
        }
        (kept, equal)
    }
}

impl Sink for Matcher<'_> {
    fn open(&mut self, kind: Kind) {
        let target = self.child_target().filter(|target| match kind {
            Kind::Array => target.is_array(),
            Kind::Object => target.is_object(),
        });
        self.frames.push(Frame { target, ok: true, count: 0, key: None, keys: HashSet::default() });
    }

    fn close(&mut self) {
        if let Some(frame) = self.frames.pop() {
            let equal = frame.target.is_some_and(|target| frame.ok && frame.count == len(target));
            self.child_done(equal);
        }
    }

    fn string_start(&mut self, key: bool) {
        self.in_key = key;
        if key {
            self.key_text.clear();
        } else {
            self.string_target = self.child_target().and_then(Value::as_str);
            self.string_len = 0;
            self.string_ok = self.string_target.is_some();
        }
    }

    fn string_part(&mut self, part: &str) {
        if self.in_key {
            self.key_text.push_str(part);
        } else if self.string_ok {
            let rest = self.string_target.and_then(|target| target.get(self.string_len..)).unwrap_or_default();
            if rest.starts_with(part) {
                self.string_len += part.len();
            } else {
                self.string_ok = false;
            }
        }
    }

    fn string_end(&mut self) {
        if self.in_key {
            if let Some(frame) = self.frames.last_mut() {
                if !frame.keys.insert(fnv1a(&self.key_text)) {
                    self.duplicate_key = true;
                }
                let mut key = frame.key.take().unwrap_or_default();
                key.clone_from(&self.key_text);
                frame.key = Some(key);
            }
        } else {
            let equal = self.string_ok && self.string_target.is_some_and(|target| target.len() == self.string_len);
            self.child_done(equal);
        }
    }

    fn number(&mut self, text: &str) -> bool {
        let Some(value) = parse_number(text) else { return false };
        let equal = self.child_target() == Some(&value);
        self.child_done(equal);
        true
    }

    fn literal(&mut self, lit: Lit) {
        let equal = self.child_target() == Some(&lit_value(lit));
        self.child_done(equal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::build::Builder;
    use crate::output::json::scan::Grammar;
    use serde_json::json;

    /// The matcher's verdict at every byte equals comparing the materialised prefix.
    #[test]
    fn verdict_equals_materialised_comparison_at_every_byte() {
        let texts = [
            r#"{"a": [1, 2.50, "x\"y\u00e9\ud83d\ude00"], "b": {"c": null, "d": true}, "e": -0}"#,
            r#"[1, [2, [3, {"k": "v"}]], "s", false, 10]"#,
            r#""just a string""#,
            "12.5e3",
            r#"{"a": 1, "a": 2}"#,
            r#"[1, 2,]"#,
        ];
        for text in texts {
            let mut full = Scanner::new(Grammar::LENIENT, 0);
            let mut builder = Builder::new(false);
            full.feed(text, &mut builder);
            let reference = builder.materialise(&full);
            let others = [reference.clone(), Some(json!({"a": [1]})), Some(json!("just a")), None];
            for target in &others {
                let mut scanner = Scanner::new(Grammar::LENIENT, 0);
                let mut matcher = Matcher::new(target.as_ref());
                let mut scanner2 = Scanner::new(Grammar::LENIENT, 0);
                let mut builder = Builder::new(false);
                for (at, c) in text.char_indices() {
                    let chunk = &text[at..at + c.len_utf8()];
                    scanner.feed(chunk, &mut matcher);
                    scanner2.feed(chunk, &mut builder);
                    if matcher.lost() {
                        break;
                    }
                    let value = builder.materialise(&scanner2);
                    let expected = (value.is_some(), value.is_some() && value.as_ref() == target.as_ref());
                    assert_eq!(
                        matcher.verdict(&scanner),
                        expected,
                        "{text:?} cut at {}: {value:?} vs {target:?}",
                        at + c.len_utf8()
                    );
                }
            }
        }
    }
}
