//! The items of a JSONL answer. A record read as it stands is kept as its JSON text and read into a
//! `serde_json::Value` when asked for; a record the profile changed (repaired, split from an array,
//! read with Python's rules) is kept as its value.
//!
//! Why text: a parse keeps every record, and a `Value` is about a dozen allocations and a kilobyte
//! for a five-member record, which is most of the cost of judging a large answer; the text is one
//! allocation of its own length. The records were judged from the same text by the same parser, so
//! reading it again gives exactly the value that was judged.
//!
//! Read back (a report in the history), the items are the values their serialization wrote: equal to
//! the items that were written, each kept as its value.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeSeq, Serializer};
use serde_json::Value;

/// The items, in order; equality and serialization are those of the values.
#[derive(Clone, Debug, Default)]
pub struct Items(Vec<Item>);

#[derive(Clone, Debug)]
enum Item {
    /// The JSON text of an object, read as it stands.
    Text(Box<str>),
    Value(Value),
}

impl Item {
    fn value(&self) -> Cow<'_, Value> {
        match self {
            // The text was read by this parser before, so it reads again; `null` is never reached.
            Item::Text(text) => Cow::Owned(crate::output::jsonl::read_value(text).unwrap_or(Value::Null)),
            Item::Value(value) => Cow::Borrowed(value),
        }
    }
}

impl Items {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every item, each read as it is reached.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cow<'_, Value>> + '_ {
        self.0.iter().map(Item::value)
    }

    /// The item at `index`, read.
    pub fn get(&self, index: usize) -> Option<Cow<'_, Value>> {
        self.0.get(index).map(Item::value)
    }

    /// Removes the items at `indices` (ascending, each once; others are ignored).
    pub(crate) fn remove_all(&mut self, indices: &[usize]) {
        let mut drop = indices.iter().peekable();
        let mut index = 0;
        self.0.retain(|_| {
            let gone = drop.next_if_eq(&&index).is_some();
            index += 1;
            !gone
        });
    }

    /// Every item, read.
    pub fn to_values(&self) -> Vec<Value> {
        self.iter().map(Cow::into_owned).collect()
    }

    pub fn into_values(self) -> Vec<Value> {
        self.0
            .into_iter()
            .map(|item| match item {
                Item::Value(value) => value,
                text => text.value().into_owned(),
            })
            .collect()
    }

    /// Keeps an object that was read from `text` exactly as it stands.
    pub(crate) fn push_text(&mut self, text: &str) {
        self.0.push(Item::Text(text.into()));
    }

    pub(crate) fn push(&mut self, value: Value) {
        self.0.push(Item::Value(value));
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }

    pub(crate) fn append(&mut self, other: Items) {
        self.0.extend(other.0);
    }

    /// A copy, made on two threads when `two_threads` (a long list of values is a tree of
    /// allocations each, and two threads copy it in about half the time).
    pub(crate) fn copy(&self, two_threads: bool) -> Items {
        if !two_threads {
            return self.clone();
        }
        let (head, tail) = self.0.split_at(self.0.len() / 2);
        let (mut items, tail) = std::thread::scope(|scope| {
            let tail = scope.spawn(|| tail.to_vec());
            let mut items = Vec::with_capacity(self.0.len());
            items.extend_from_slice(head);
            (items, tail.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        items.extend(tail);
        Items(items)
    }
}

impl PartialEq for Items {
    fn eq(&self, other: &Items) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl PartialEq<[Value]> for Items {
    fn eq(&self, other: &[Value]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| *a == *b)
    }
}

impl PartialEq<Vec<Value>> for Items {
    fn eq(&self, other: &Vec<Value>) -> bool {
        *self == **other
    }
}

impl<const N: usize> PartialEq<[Value; N]> for Items {
    fn eq(&self, other: &[Value; N]) -> bool {
        *self == other[..]
    }
}

impl Serialize for Items {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for item in self.iter() {
            seq.serialize_element(&*item)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Items {
    /// Reads what [`Items`]' `Serialize` writes, a JSON array of the items, each kept as its value.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let values = Vec::<Value>::deserialize(deserializer)?;
        Ok(Items(values.into_iter().map(Item::Value).collect()))
    }
}
