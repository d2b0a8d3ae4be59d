//! The tape as an instance representation of the `jsonschema` crate (its `json::Json` traits), so
//! a compiled schema validates a tape directly. Member lookups compare names in order, which for the
//! few members of a record is cheaper than hashing; so the validator is told to prefer one pass over
//! the members to repeated lookups.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, Node, NodeIdentity, Object};
use jsonschema::JsonType;
use serde_json::{Number, Value};

use super::{Elements, Entry, Members, Tape};

/// The tape representation (a marker type: the nodes are [`TapeNode`]s).
pub struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Tape;

    /// A lookup walks the members, so a members pass is never the dearer choice.
    const KEYS_PER_LOOKUP: usize = 1 << 16;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(buffer: &mut Tape, string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        buffer.clear();
        let (start, end) = buffer.push_text(string);
        buffer.entries.push(Entry::String(start, end));
        f(buffer.root())
    }
}

/// One value on a tape.
#[derive(Clone, Copy, Debug)]
pub struct TapeNode<'a> {
    tape: &'a Tape,
    at: usize,
}

impl<'a> TapeNode<'a> {
    pub(super) fn new(tape: &'a Tape, at: usize) -> TapeNode<'a> {
        TapeNode { tape, at }
    }

    fn entry(&self) -> Option<&'a Entry> {
        self.tape.entries.get(self.at)
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeNode<'a>;
    type Array = TapeNode<'a>;
    type Number = &'a Number;

    fn as_object(&self) -> Option<TapeNode<'a>> {
        matches!(self.entry(), Some(Entry::Object { .. })).then_some(*self)
    }

    fn as_array(&self) -> Option<TapeNode<'a>> {
        matches!(self.entry(), Some(Entry::Array { .. })).then_some(*self)
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.entry() {
            Some(Entry::String(start, end)) => Some(Cow::Borrowed(self.tape.text(*start, *end))),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<&'a Number> {
        match self.entry() {
            Some(Entry::Number(number)) => Some(number),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.entry() {
            Some(Entry::Bool(value)) => Some(*value),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.entry(), None | Some(Entry::Null | Entry::Key(..)))
    }

    fn json_type(&self) -> JsonType {
        match self.entry() {
            None | Some(Entry::Null | Entry::Key(..)) => JsonType::Null,
            Some(Entry::Bool(_)) => JsonType::Boolean,
            Some(Entry::Number(_)) => JsonType::Number,
            Some(Entry::String(..)) => JsonType::String,
            Some(Entry::Array { .. }) => JsonType::Array,
            Some(Entry::Object { .. }) => JsonType::Object,
        }
    }

    /// `const`/`enum` against a scalar compare in place (a string `const` is on every union branch).
    fn equals_value(&self, expected: &Value) -> bool {
        match (self.entry(), expected) {
            (Some(Entry::String(start, end)), Value::String(expected)) => self.tape.text(*start, *end) == expected,
            (Some(Entry::Bool(value)), Value::Bool(expected)) => value == expected,
            (Some(Entry::Null), Value::Null) => true,
            (Some(Entry::Number(number)), Value::Number(expected)) => {
                jsonschema::json::cmp::equal_numbers(&number, expected)
            }
            (Some(Entry::Array { .. } | Entry::Object { .. }), Value::Array(_) | Value::Object(_)) => {
                jsonschema::json::cmp::equal(&self.to_value(), expected)
            }
            _ => false,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.tape.value_at(self.at))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        self.entry().map(|entry| NodeIdentity::new(std::ptr::from_ref(entry) as usize))
    }
}

impl<'a> Object<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type MemberName = &'a str;
    type MembersIter = MemberNodes<'a>;

    fn len(&self) -> usize {
        match self.entry() {
            Some(Entry::Object { len, .. }) => *len,
            _ => 0,
        }
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        let tape = self.tape;
        tape.members(self.at).find(|(name, _)| *name == &**key).map(|(_, value)| TapeNode::new(tape, value))
    }

    fn members(&self) -> Self::MembersIter {
        MemberNodes(self.tape.members(self.at))
    }
}

impl<'a> Array<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = ElementNodes<'a>;

    fn len(&self) -> usize {
        match self.entry() {
            Some(Entry::Array { len, .. }) => *len,
            _ => 0,
        }
    }

    fn elements(&self) -> Self::ElementsIter {
        ElementNodes(self.tape.elements(self.at))
    }
}

/// An object's members as nodes.
pub struct MemberNodes<'a>(Members<'a>);

impl<'a> Iterator for MemberNodes<'a> {
    type Item = (&'a str, TapeNode<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let tape = self.0.tape;
        self.0.next().map(|(name, value)| (name, TapeNode::new(tape, value)))
    }
}

/// An array's elements as nodes.
pub struct ElementNodes<'a>(Elements<'a>);

impl<'a> Iterator for ElementNodes<'a> {
    type Item = TapeNode<'a>;

    fn next(&mut self) -> Option<TapeNode<'a>> {
        let tape = self.0.tape;
        self.0.next().map(|element| TapeNode::new(tape, element))
    }
}
