//! Reading a `serde_json::Value` the way `serde_json::from_str` does, with each object built at its
//! exact size: its members are gathered on a scratch stack first, then the map is allocated once.
//!
//! serde_json's own reader grows each object's map as members arrive (two table and two entry
//! allocations plus a rehash for a five-member record, with room for seven); reading a JSONL answer is
//! mostly that. Same values, same errors (the parsing and its messages are serde_json's, only the
//! building of the value is ours), same member order and duplicate-key rule (the last value wins, in
//! the first one's place). Written for serde_json without `arbitrary_precision` and `raw_value`, as
//! this crate builds it; a test compares the two readers on random JSON.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

/// A scratch stack kept beyond this many members is dropped after use rather than kept for the next.
const KEEP_SCRATCH: usize = 4096;

thread_local! {
    static SCRATCH: Cell<Vec<(String, Value)>> = const { Cell::new(Vec::new()) };
}

/// `serde_json::from_str::<Value>(text)`, objects allocated at their exact size.
pub(crate) fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<Exact>(text).map(|exact| exact.0)
}

/// A `Value` read with exact-size objects; usable wherever serde reads a `Value` (a stream of them).
pub(crate) struct Exact(pub Value);

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Exact, D::Error> {
        let mut scratch = SCRATCH.take();
        let read = Build { scratch: &mut scratch }.deserialize(deserializer);
        scratch.clear();
        if scratch.capacity() <= KEEP_SCRATCH {
            SCRATCH.set(scratch);
        }
        read.map(Exact)
    }
}

/// Builds one value; objects gather their members above the scratch stack's current top.
struct Build<'s> {
    scratch: &'s mut Vec<(String, Value)>,
}

impl<'de> DeserializeSeed<'de> for Build<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Build<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut elements = Vec::new();
        while let Some(element) = seq.next_element_seed(Build { scratch: &mut *self.scratch })? {
            elements.push(element);
        }
        Ok(Value::Array(elements))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let start = self.scratch.len();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Build { scratch: &mut *self.scratch })?;
            self.scratch.push((key, value));
        }
        let members = self.scratch.drain(start..);
        let mut object = Map::with_capacity(members.len());
        for (key, value) in members {
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Random JSON texts: every kind of value, nested, with repeated member names.
    pub(crate) fn json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|n| format!("{n:e}")),
            Just("1e400".to_owned()),
            Just("-0".to_owned()),
            "[a-c\"\\\\é]{0,3}".prop_map(|s| format!("\"{s}\"")),
            Just("\"\\u00e9\\ud83d\\ude00\"".to_owned()),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(|items| format!("[{}]", items.join(","))),
                proptest::collection::vec(("[a-d]{1,2}", inner), 0..6).prop_map(|members| {
                    let members: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\" : {v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn reads_what_serde_json_reads(text in json_text(), cut in any::<usize>(), junk in "[ ,}\\]x0]{0,2}") {
            let expect = |text: &str| serde_json::from_str::<Value>(text).map_err(|e| e.to_string());
            let mine = |text: &str| from_str(text).map_err(|e| e.to_string());
            prop_assert_eq!(mine(&text), expect(&text));
            let at = (0..=cut % (text.len() + 1)).rev().find(|at| text.is_char_boundary(*at)).unwrap_or(0);
            let broken = format!("{}{junk}", &text[..at]);
            prop_assert_eq!(mine(&broken), expect(&broken));
            // Member order and the duplicate-key rule are serde_json's.
            if let (Ok(a), Ok(b)) = (from_str(&text), serde_json::from_str::<Value>(&text)) {
                prop_assert_eq!(a.to_string(), b.to_string());
            }
        }
    }

    #[test]
    fn deep_nesting_fails_as_serde_json_does() {
        for deep in ["[".repeat(10_000), "{\"a\":".repeat(10_000), format!("{}{}", "[".repeat(127), "]".repeat(127))] {
            let expected = serde_json::from_str::<Value>(&deep).map_err(|e| e.to_string());
            assert_eq!(from_str(&deep).map_err(|e| e.to_string()), expected);
        }
        let text = r#"{"a":1,"b":{"c":[{"d":2,"d":3}]},"a":4}"#;
        assert_eq!(from_str(text).unwrap().to_string(), serde_json::from_str::<Value>(text).unwrap().to_string());
    }
}
