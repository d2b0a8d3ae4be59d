//! What the fuzz targets share: an input read as option bytes and a text, chunk boundaries drawn
//! from a seed, and the schema checks the parsers are fuzzed with.

use std::sync::{Arc, OnceLock};

use serde_json::json;
use tunebench::output::Profile;
use tunebench::schema::{Check, CompiledSchema};

/// Every profile, in the order an option byte picks them.
pub const PROFILES: [Profile; 4] = [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc];

/// A fuzz input: the first byte holds options, the second seeds the chunking, the rest is the text
/// (invalid UTF-8 replaced, as a provider's reader would).
pub struct Input {
    pub options: u8,
    pub seed: u8,
    pub text: String,
}

impl Input {
    pub fn new(data: &[u8]) -> Input {
        let byte = |at: usize| data.get(at).copied().unwrap_or(0);
        let text = String::from_utf8_lossy(data.get(2..).unwrap_or_default()).into_owned();
        Input { options: byte(0), seed: byte(1), text }
    }

    /// The profile the low two option bits pick.
    pub fn profile(&self) -> Profile {
        PROFILES[usize::from(self.options & 3)]
    }

    /// Whether option bit 2 asks for a schema check.
    pub fn checked(&self) -> bool {
        self.options & 4 != 0
    }
}

/// A small xorshift generator: the same seed draws the same numbers.
pub struct Draw(u32);

impl Draw {
    pub fn new(seed: u8) -> Draw {
        Draw(0x9E37_79B9 ^ u32::from(seed).wrapping_mul(0x0101_0101) | 1)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        if bound == 0 {
            0
        } else {
            self.0 as usize % bound
        }
    }
}

/// `text` cut into pieces of 1 to 16 bytes (moved up to character boundaries), drawn from `seed`.
pub fn chunks(text: &str, seed: u8) -> Vec<&str> {
    let mut draw = Draw::new(seed);
    let mut pieces = Vec::new();
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + 1 + draw.below(16)).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        pieces.push(&text[from..to]);
        from = to;
    }
    pieces
}

/// `bytes` cut into pieces of 1 to 16 bytes anywhere (inside a UTF-8 character too), drawn from `seed`.
pub fn byte_pieces(bytes: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut draw = Draw::new(seed);
    let mut pieces = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (piece, tail) = rest.split_at((1 + draw.below(16)).min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// The item schema of the sample prompts: a union of definitions and relationships, as a check.
pub fn item_check() -> Arc<dyn Check> {
    static CHECK: OnceLock<Arc<CompiledSchema>> = OnceLock::new();
    CHECK.get_or_init(|| Arc::new(CompiledSchema::compile(&item_schema()).expect("the item schema compiles"))).clone()
}

/// An array of such items, as a json answer's check.
pub fn answer_check() -> Arc<dyn Check> {
    static CHECK: OnceLock<Arc<CompiledSchema>> = OnceLock::new();
    CHECK
        .get_or_init(|| {
            let schema = json!({"type": "array", "items": item_schema()});
            Arc::new(CompiledSchema::compile(&schema).expect("the answer schema compiles"))
        })
        .clone()
}

fn item_schema() -> serde_json::Value {
    json!({"oneOf": [
        {"type": "object", "required": ["type", "entity", "definition"], "additionalProperties": false,
         "properties": {"type": {"const": "definition"}, "entity": {"type": "string", "minLength": 1},
                        "definition": {"type": "string"}}},
        {"type": "object", "required": ["type", "subject", "predicate", "object"],
         "properties": {"type": {"const": "relationship"}, "subject": {"type": "string"},
                        "predicate": {"type": "string"}, "object": {"type": "string"},
                        "object-entity": {"type": "boolean"}}}
    ]})
}

/// Asserts a provider's events end with exactly one Finish or Error, and only there.
pub fn ends_once(events: &[tunebench::provider::Event]) {
    use tunebench::provider::Event;
    let ends = events.iter().filter(|event| matches!(event, Event::Finish(_) | Event::Error(_))).count();
    assert_eq!(ends, 1, "{events:?}");
    assert!(matches!(events.last(), Some(Event::Finish(_) | Event::Error(_))), "{events:?}");
}
