//! A JSON value read into one flat buffer that is reused from record to record (a "tape"), so that a
//! record can be checked against a schema without building a `serde_json::Value`: no allocation per
//! member, no hashing of keys, nothing to free afterwards.
//!
//! The text is read by serde_json's own parser, so a tape reads exactly what `serde_json::from_str`
//! reads, with the same errors and the same nesting limit; only what is built differs. Each value is
//! one entry, written in document order; an array or object entry records how many members it has
//! and where its subtree ends, so a reader steps over a member in one move. Strings and keys are
//! copied into one shared text buffer.
//!
//! One difference from a `Value` is kept visible rather than hidden: an object that repeats a key
//! (where a `Value` keeps the last value in the first one's place) sets [`Tape::repeats_keys`], and
//! callers then read the text as a `Value` instead. The schema side of the tape (the `jsonschema`
//! traits) is in `tape/node.rs`.

mod node;

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

pub use self::node::{TapeJson, TapeNode};

/// Objects up to this many members are checked for a repeated key pairwise; larger ones by sorting.
const PAIRWISE_UP_TO: usize = 16;

/// A tape holding more entries or string bytes than this is freed after use.
const KEEP: usize = 1 << 16;

/// One JSON value as a flat list of entries (see the module documentation).
#[derive(Debug, Default)]
pub struct Tape {
    entries: Vec<Entry>,
    strings: String,
    repeats_keys: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Entry {
    Null,
    Bool(bool),
    Number(Number),
    /// A string value: its byte range in [`Tape::strings`].
    String(usize, usize),
    /// An object member's name: its byte range in [`Tape::strings`]; its value is the next entry.
    Key(usize, usize),
    /// `len` elements follow; `end` is the index just past the last entry of the subtree.
    Array {
        len: usize,
        end: usize,
    },
    /// `len` (key, value) pairs follow; `end` as for arrays.
    Object {
        len: usize,
        end: usize,
    },
}

impl Tape {
    /// Reads `text` (one JSON text, nothing after it but whitespace) in place of what the tape held.
    pub fn read(&mut self, text: &str) -> Result<(), serde_json::Error> {
        self.clear();
        let mut deserializer = serde_json::Deserializer::from_str(text);
        Write { tape: self }.deserialize(&mut deserializer)?;
        deserializer.end()
    }

    /// The top-level value (`null` for an empty tape).
    pub fn root(&self) -> TapeNode<'_> {
        TapeNode::new(self, 0)
    }

    /// Whether the top-level value is an object.
    pub fn is_object(&self) -> bool {
        matches!(self.entries.first(), Some(Entry::Object { .. }))
    }

    /// Whether some object repeats a key (a `Value` would keep only the last; see the module docs).
    pub fn repeats_keys(&self) -> bool {
        self.repeats_keys
    }

    /// The string member `key` of the top-level object, if there is one.
    pub fn member_str(&self, key: &str) -> Option<&str> {
        let (_, value) = self.members(0).find(|(name, _)| *name == key)?;
        match self.entries.get(value)? {
            Entry::String(start, end) => self.strings.get(*start..*end),
            _ => None,
        }
    }

    /// The top-level value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        self.value_at(0)
    }

    /// Frees a tape grown past [`KEEP`] entries or bytes (one huge record), rather than keeping that
    /// much memory for the records after it.
    pub fn release_if_large(&mut self) {
        if self.entries.capacity() > KEEP || self.strings.capacity() > KEEP {
            *self = Tape::default();
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.strings.clear();
        self.repeats_keys = false;
    }

    /// The value whose entry is at `at`, built (recursion is bounded by the reader's nesting limit).
    fn value_at(&self, at: usize) -> Value {
        match self.entries.get(at) {
            None | Some(Entry::Null | Entry::Key(..)) => Value::Null,
            Some(Entry::Bool(value)) => Value::Bool(*value),
            Some(Entry::Number(number)) => Value::Number(number.clone()),
            Some(Entry::String(start, end)) => Value::String(self.text(*start, *end).to_owned()),
            Some(Entry::Array { len, .. }) => {
                let mut elements = Vec::with_capacity(*len);
                elements.extend(self.elements(at).map(|element| self.value_at(element)));
                Value::Array(elements)
            }
            Some(Entry::Object { len, .. }) => {
                let mut object = Map::with_capacity(*len);
                for (name, value) in self.members(at) {
                    object.insert(name.to_owned(), self.value_at(value));
                }
                Value::Object(object)
            }
        }
    }

    fn text(&self, start: usize, end: usize) -> &str {
        self.strings.get(start..end).unwrap_or_default()
    }

    /// The index just past the subtree whose entry is at `at`.
    fn end_of(&self, at: usize) -> usize {
        match self.entries.get(at) {
            Some(Entry::Array { end, .. } | Entry::Object { end, .. }) => *end,
            _ => at + 1,
        }
    }

    /// The entries of the elements of the array at `at`.
    fn elements(&self, at: usize) -> Elements<'_> {
        let len = match self.entries.get(at) {
            Some(Entry::Array { len, .. }) => *len,
            _ => 0,
        };
        Elements { tape: self, next: at + 1, left: len }
    }

    /// The members of the object at `at`: each name and the entry of its value.
    fn members(&self, at: usize) -> Members<'_> {
        let len = match self.entries.get(at) {
            Some(Entry::Object { len, .. }) => *len,
            _ => 0,
        };
        Members { tape: self, next: at + 1, left: len }
    }

    fn push_text(&mut self, text: &str) -> (usize, usize) {
        let start = self.strings.len();
        self.strings.push_str(text);
        (start, self.strings.len())
    }

    /// Notes whether the object just written at `at` names a member twice.
    fn note_repeated_keys(&mut self, at: usize, len: usize) {
        if len < 2 || self.repeats_keys {
            return;
        }
        let repeats = if len <= PAIRWISE_UP_TO {
            self.members(at)
                .enumerate()
                .any(|(index, (name, _))| self.members(at).skip(index + 1).any(|(later, _)| later == name))
        } else {
            let mut names: Vec<&str> = self.members(at).map(|(name, _)| name).collect();
            names.sort_unstable();
            names.windows(2).any(|pair| pair.first() == pair.last())
        };
        self.repeats_keys = repeats;
    }
}

/// The elements of an array: the entry of each.
struct Elements<'a> {
    tape: &'a Tape,
    next: usize,
    left: usize,
}

impl Iterator for Elements<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        self.left = self.left.checked_sub(1)?;
        let element = self.next;
        self.next = self.tape.end_of(element);
        Some(element)
    }
}

/// The members of an object: each name and the entry of its value.
struct Members<'a> {
    tape: &'a Tape,
    next: usize,
    left: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, usize);

    fn next(&mut self) -> Option<(&'a str, usize)> {
        self.left = self.left.checked_sub(1)?;
        let name = match self.tape.entries.get(self.next) {
            Some(Entry::Key(start, end)) => self.tape.text(*start, *end),
            _ => "",
        };
        let value = self.next + 1;
        self.next = self.tape.end_of(value);
        Some((name, value))
    }
}

/// Writes the next value onto the tape.
struct Write<'t> {
    tape: &'t mut Tape,
}

impl<'de> DeserializeSeed<'de> for Write<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Write<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<(), E> {
        self.tape.entries.push(Entry::Bool(value));
        Ok(())
    }

    fn visit_i64<E>(self, value: i64) -> Result<(), E> {
        self.tape.entries.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_u64<E>(self, value: u64) -> Result<(), E> {
        self.tape.entries.push(Entry::Number(value.into()));
        Ok(())
    }

    fn visit_f64<E>(self, value: f64) -> Result<(), E> {
        self.tape.entries.push(Number::from_f64(value).map_or(Entry::Null, Entry::Number));
        Ok(())
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        let (start, end) = self.tape.push_text(value);
        self.tape.entries.push(Entry::String(start, end));
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        self.tape.entries.push(Entry::Null);
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.tape.entries.push(Entry::Null);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = self.tape.entries.len();
        self.tape.entries.push(Entry::Array { len: 0, end: 0 });
        let mut len = 0;
        while seq.next_element_seed(Write { tape: &mut *self.tape })?.is_some() {
            len += 1;
        }
        let end = self.tape.entries.len();
        if let Some(entry) = self.tape.entries.get_mut(at) {
            *entry = Entry::Array { len, end };
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let at = self.tape.entries.len();
        self.tape.entries.push(Entry::Object { len: 0, end: 0 });
        let mut len = 0;
        while map.next_key_seed(Name { tape: &mut *self.tape })?.is_some() {
            map.next_value_seed(Write { tape: &mut *self.tape })?;
            len += 1;
        }
        let end = self.tape.entries.len();
        if let Some(entry) = self.tape.entries.get_mut(at) {
            *entry = Entry::Object { len, end };
        }
        self.tape.note_repeated_keys(at, len);
        Ok(())
    }
}

/// Writes an object member's name onto the tape.
struct Name<'t> {
    tape: &'t mut Tape,
}

impl<'de> DeserializeSeed<'de> for Name<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_str<E>(self, value: &str) -> Result<(), E> {
        let (start, end) = self.tape.push_text(value);
        self.tape.entries.push(Entry::Key(start, end));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
