//! Incremental state for the `trustgraph` and `ptc` profiles: cheap to keep up chunk by chunk, it says
//! when the peers' exact extraction (run on the whole text by [`super::extract`]) can succeed and when
//! its outcome can have changed, so a sweep calls the exact function a bounded number of times.

use super::extract::first_fenced_block;
use super::extract::{elixir_trim, python_strip};
use super::scan::{Expect, Fed, Grammar, NoSink, Scanner};

/// The first fenced pair: the first ```` ``` ```` and the next one at least 3 bytes later. Both peers'
/// regexes match exactly when this pair exists (their tags, `json` or none, hold no backtick).
#[derive(Clone, Debug, Default)]
pub struct FencePair {
    open: Option<usize>,
    close: Option<usize>,
    scanned: usize,
}

impl FencePair {
    pub fn feed(&mut self, text: &str) {
        let bytes = text.as_bytes();
        while self.close.is_none() {
            let from = match self.open {
                None => self.scanned.saturating_sub(2),
                Some(open) => self.scanned.saturating_sub(2).max(open + 3),
            };
            let found = bytes.get(from..).and_then(|rest| rest.windows(3).position(|w| w == b"```"));
            match (found, self.open) {
                (Some(at), None) => {
                    self.open = Some(from + at);
                    self.scanned = from + at + 3;
                }
                (Some(at), Some(_)) => self.close = Some(from + at),
                (None, _) => {
                    self.scanned = bytes.len();
                    return;
                }
            }
        }
    }

    pub fn closed(&self) -> bool {
        self.close.is_some()
    }
}

/// Python's `str.isspace`.
fn python_space(c: char) -> bool {
    python_strip(c.encode_utf8(&mut [0; 4])).is_empty()
}

/// TrustGraph: before the fenced pair closes, `json.loads(text.strip())` succeeds only when the text
/// is blanks, one value in Python's grammar, blanks; this gate follows that with no value built.
#[derive(Clone, Debug)]
pub struct TrustgraphGate {
    pair: FencePair,
    leading: bool,
    scanner: Scanner,
    failed: bool,
    pos: usize,
}

impl Default for TrustgraphGate {
    fn default() -> Self {
        TrustgraphGate {
            pair: FencePair::default(),
            leading: true,
            scanner: Scanner::new(Grammar::PYTHON, 0),
            failed: false,
            pos: 0,
        }
    }
}

impl TrustgraphGate {
    pub fn feed(&mut self, text: &str) {
        self.pair.feed(text);
        while !self.failed && self.pos < text.len() {
            let rest = text.get(self.pos..).unwrap_or_default();
            if self.leading || self.scanner.expect() == Expect::Done {
                let Some(c) = rest.chars().next() else { return };
                if python_space(c) {
                    self.pos += c.len_utf8();
                } else if self.leading {
                    self.leading = false;
                    self.scanner = Scanner::new(Grammar::PYTHON, self.pos);
                } else {
                    self.failed = true;
                }
                continue;
            }
            match self.scanner.feed(rest, &mut NoSink) {
                Fed::More => self.pos = text.len(),
                Fed::Done(read) => self.pos += read,
                Fed::Failed => self.failed = true,
            }
        }
    }

    /// A key that changes whenever the exact outcome may have changed; `None` when it fails for sure.
    pub fn key(&self) -> Option<(u8, usize)> {
        if self.pair.closed() {
            return Some((1, 0));
        }
        let complete = !self.failed && !self.leading && self.scanner.complete_at_end();
        let growing_number = self.scanner.expect() != Expect::Done;
        complete.then_some((0, if growing_number { self.pos } else { 0 }))
    }
}

/// PtcRunner: a non-empty first fenced block decides; else the raw candidate from the first `{` or `[`
/// decides once its brackets balance (PtcRunner's counting: that bracket kind only, strings toggled by
/// every unescaped `"`).
#[derive(Clone, Debug, Default)]
pub struct PtcGate {
    pair: FencePair,
    block_decides: Option<bool>,
    bracket: Option<(u8, u8)>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    matched: bool,
    pos: usize,
}

impl PtcGate {
    pub fn feed(&mut self, text: &str) {
        self.pair.feed(text);
        if self.pair.closed() && self.block_decides.is_none() {
            let block = first_fenced_block(text, "json", 0).unwrap_or_default();
            self.block_decides = Some(!elixir_trim(block).is_empty());
        }
        let bytes = text.as_bytes();
        while !self.matched {
            let Some(&byte) = bytes.get(self.pos) else { return };
            self.pos += 1;
            let Some((open, close)) = self.bracket else {
                match byte {
                    b'{' => self.bracket = Some((b'{', b'}')),
                    b'[' => self.bracket = Some((b'[', b']')),
                    _ => continue,
                }
                self.depth = 1;
                continue;
            };
            if self.escaped {
                self.escaped = false;
            } else if self.in_string && byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = !self.in_string;
            } else if !self.in_string && byte == open {
                self.depth += 1;
            } else if !self.in_string && byte == close {
                self.depth -= 1;
                self.matched = self.depth == 0;
            }
        }
    }

    /// A key that changes whenever the exact outcome may have changed; `None` when it is
    /// `no_json_found` for sure.
    pub fn key(&self) -> Option<(u8, usize)> {
        match (self.block_decides, self.matched) {
            (Some(true), _) => Some((1, 0)),
            (_, true) => Some((0, 0)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_pair_needs_a_second_mark_three_bytes_on() {
        let mut pair = FencePair::default();
        for (text, closed) in [("``", false), ("````", false), ("``````", true)] {
            pair.feed(text);
            assert_eq!(pair.closed(), closed, "{text}");
        }
    }

    #[test]
    fn trustgraph_gate_follows_strip_and_loads() {
        let key = |text: &str| {
            let mut gate = TrustgraphGate::default();
            gate.feed(text);
            gate.key()
        };
        assert_eq!(key(" \u{a0}{\"a\": NaN}\u{2028} "), Some((0, 0)));
        assert_eq!(key("12"), Some((0, 2)));
        assert_eq!(key("{\"a\": 1} x"), None);
        assert_eq!(key("{\"a\": 1"), None);
        assert_eq!(key("x ```json\n{} ```"), Some((1, 0)));
    }

    #[test]
    fn ptc_gate_waits_for_balance() {
        let key = |text: &str| {
            let mut gate = PtcGate::default();
            gate.feed(text);
            gate.key()
        };
        assert_eq!(key("see {\"a\": \"}\""), None);
        assert_eq!(key("see {\"a\": \"}\"}"), Some((0, 0)));
        assert_eq!(key("```json\n```"), None);
        assert_eq!(key("```json\n{}```"), Some((1, 0)));
    }
}
