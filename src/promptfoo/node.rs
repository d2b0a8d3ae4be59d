//! A promptfoo config read as a tree of YAML values, each node with the line it is written on
//! (serde-saphyr's spans), so every key of the config can be judged, and every mistake named, at its
//! `file:line`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// One YAML value and the line it starts on (1-based; 0 when unknown).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub line: usize,
    pub tree: Tree,
}

/// What a node holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    Null,
    Bool(bool),
    Number(Number),
    Text(String),
    List(Vec<Node>),
    /// Keys in the order written; keys are text (a YAML key of another kind is written as text).
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The node as plain JSON (its lines dropped).
    pub fn to_json(&self) -> Value {
        match &self.tree {
            Tree::Null => Value::Null,
            Tree::Bool(b) => Value::Bool(*b),
            Tree::Number(n) => Value::Number(n.clone()),
            Tree::Text(t) => Value::String(t.clone()),
            Tree::List(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Tree::Map(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.clone(), v.to_json())).collect::<Map<String, Value>>())
            }
        }
    }

    /// The text, when the node is text.
    pub fn as_text(&self) -> Option<&str> {
        match &self.tree {
            Tree::Text(t) => Some(t),
            _ => None,
        }
    }

    /// A number as f64, when the node is one.
    pub fn as_f64(&self) -> Option<f64> {
        match &self.tree {
            Tree::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// What the node is, in words.
    pub fn kind(&self) -> &'static str {
        match &self.tree {
            Tree::Null => "null",
            Tree::Bool(_) => "a boolean",
            Tree::Number(_) => "a number",
            Tree::Text(_) => "text",
            Tree::List(_) => "a list",
            Tree::Map(_) => "a mapping",
        }
    }

    /// The entries of a mapping by key, `None` when the node is not one.
    pub fn entries(&self) -> Option<BTreeMap<&str, &Node>> {
        match &self.tree {
            Tree::Map(entries) => Some(entries.iter().map(|(k, v)| (k.as_str(), v)).collect()),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Node, D::Error> {
        let spanned = serde_saphyr::Spanned::<Tree>::deserialize(deserializer)?;
        Ok(Node { line: spanned.referenced.line() as usize, tree: spanned.value })
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tree, D::Error> {
        deserializer.deserialize_any(TreeVisitor)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Tree, E> {
        Ok(Tree::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tree, D::Error> {
        Tree::deserialize(deserializer)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tree, E> {
        Ok(Tree::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tree, E> {
        Ok(Tree::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tree, E> {
        Ok(Tree::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tree, E> {
        match Number::from_f64(v) {
            Some(n) => Ok(Tree::Number(n)),
            None => Err(E::custom(format!("{v} is not a finite number"))),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Tree, E> {
        Ok(Tree::Text(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Tree, E> {
        Ok(Tree::Text(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Tree::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries: Vec<(String, Node)> = Vec::new();
        // Keys are read as text: YAML 1.1 would read a key such as `y` or `no` as a boolean.
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<Node>()?;
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom(format!("the key `{key}` is written twice")));
            }
            entries.push((key, value));
        }
        Ok(Tree::Map(entries))
    }
}

/// How much a config may ask of the parser (a config is small; its datasets are read apart).
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        // YAML 1.2's booleans alone (`true`, `false`), as promptfoo's parser reads them: `value: yes`
        // is the text "yes", not a boolean.
        strict_booleans: true,
        budget: serde_saphyr::budget! {
            max_nodes: 1_000_000,
            max_depth: 64,
            max_events: 2_000_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_documents: 1,
            max_total_scalar_bytes: 64 << 20,
        },
    }
}

/// `text` read as one YAML document; `Err` is the line (when known) and why.
pub fn parse(text: &str) -> Result<Node, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_saphyr::from_str_with_options::<Node>(text, options()).map_err(|e| {
        let line = e.location().map_or(0, |at| at.line() as usize);
        (line, e.without_snippet().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_knows_its_line() {
        let node = parse("a: 1\nb:\n  - x\n  - y: true\n").expect("parses");
        let entries = node.entries().expect("a map");
        assert_eq!(entries["a"].line, 1);
        let Tree::List(items) = &entries["b"].tree else { panic!("a list") };
        assert_eq!(items[0].line, 3);
        assert_eq!(items[1].line, 4, "{node:?}");
        assert_eq!(items[1].entries().expect("map").get("y").map(|n| n.line), Some(4), "{node:?}");
        assert_eq!(node.to_json(), serde_json::json!({"a": 1, "b": ["x", {"y": true}]}));
    }

    #[test]
    fn a_twice_written_key_is_an_error_with_its_line() {
        let (line, message) = parse("a: 1\nb: 2\na: 3\n").expect_err("refused");
        assert!(message.contains("duplicate mapping key: a"), "{message}");
        assert!(line >= 3, "line {line}");
    }
}
