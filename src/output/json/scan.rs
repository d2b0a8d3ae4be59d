//! An incremental scanner for ONE JSON value: fed any split of the text, it keeps an explicit stack
//! of open containers (no recursion, any depth), the in-string/escape/number/literal state and byte
//! positions, and reports what it reads to a [`Sink`] (a value builder, a matcher, or nothing).

use std::fmt;

/// Nesting deeper than this is an error wherever a value is built (serde_json's limit too).
pub const MAX_DEPTH: usize = 128;

/// Which container is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Array,
    Object,
}

/// The literals a value can be; the last three only under Python's grammar (`json.loads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lit {
    True,
    False,
    Null,
    NaN,
    Infinity,
    NegInfinity,
}

/// What the grammar tolerates beyond RFC 8259.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grammar {
    /// `[1,]` and `{"a":1,}` read as `[1]` and `{"a":1}` (each reported to the sink).
    pub trailing_commas: bool,
    /// `NaN`, `Infinity` and `-Infinity` are values, as Python's `json.loads` reads them.
    pub python_constants: bool,
    /// Opening a container this deep or deeper is an error.
    pub max_depth: usize,
}

impl Grammar {
    pub const RFC8259: Grammar = Grammar { trailing_commas: false, python_constants: false, max_depth: MAX_DEPTH };
    pub const LENIENT: Grammar = Grammar { trailing_commas: true, python_constants: false, max_depth: MAX_DEPTH };
    /// Python's `json.loads` grammar with no depth limit: only ever used to gate, never to build.
    pub const PYTHON: Grammar = Grammar { trailing_commas: false, python_constants: true, max_depth: usize::MAX };
}

/// Receives what the scanner reads, in order. Every method has a do-nothing default.
pub trait Sink {
    /// A value starts at byte `at`, with `depth` containers open around it (0 for the root).
    fn value_start(&mut self, _at: usize, _depth: usize) {}
    /// A container opens (its [`Sink::value_start`] came just before).
    fn open(&mut self, _kind: Kind) {}
    /// The innermost container closes.
    fn close(&mut self) {}
    /// A string starts; `key` when it is an object key.
    fn string_start(&mut self, _key: bool) {}
    /// More decoded characters of the current string.
    fn string_part(&mut self, _part: &str) {}
    /// The current string ends.
    fn string_end(&mut self) {}
    /// A number ends (its text is valid RFC 8259); `false` when it cannot be represented.
    fn number(&mut self, _text: &str) -> bool {
        true
    }
    /// A literal ends.
    fn literal(&mut self, _lit: Lit) {}
    /// A trailing comma at byte `at` was skipped (only with [`Grammar::trailing_commas`]).
    fn trailing_comma(&mut self, _at: usize) {}
}

/// A sink that keeps nothing: the scanner alone answers "is this one complete value?".
pub struct NoSink;
impl Sink for NoSink {}

/// What the scanner expects next outside any token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The root value.
    RootValue,
    /// A value or `]`, just after `[`.
    ValueOrClose,
    /// A value after `,` in an array (or `]` with trailing commas).
    ArrayValue,
    /// A value after `:`.
    ObjectValue,
    /// A key or `}`, just after `{`.
    KeyOrClose,
    /// A key after `,` in an object (or `}` with trailing commas).
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or the innermost container's close, after a value.
    CommaOrClose,
    /// The root value is complete.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    Hex { digits: u8, unit: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    E,
    ESign,
    Exp,
}

impl Num {
    fn valid(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::Exp)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    None,
    Str { key: bool, esc: Esc, high: Option<u32> },
    Num(Num),
    Lit { word: &'static [u8], matched: usize, lit: Lit },
}

/// The token in progress where the text stops, as a repair needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenToken {
    None,
    /// A value string; `partial_escape` is the byte where an unfinished escape (or a high surrogate
    /// still waiting for its pair) starts, which a repair drops.
    ValueString {
        start: usize,
        partial_escape: Option<usize>,
    },
    KeyString,
    /// A number; `valid` when its text so far is a complete RFC 8259 number (`1`, not `1.` or `-`).
    Number {
        valid: bool,
    },
    /// A literal not yet complete (`tr`).
    Literal,
}

/// Why the text is not one JSON value, at byte `at` of the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    pub at: usize,
    pub message: String,
    /// Too deep to build: no restart can help.
    pub fatal: bool,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Where a feed stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fed {
    /// All of the chunk was read; the value goes on.
    More,
    /// The root value ended after this many bytes of the chunk; the rest was not read.
    Done(usize),
    /// The chunk breaks the grammar; see [`Scanner::error`].
    Failed,
}

/// The incremental scanner. Positions are byte offsets in the whole answer: the value starts at
/// the `start` given to [`Scanner::new`], and each chunk continues where the last one ended.
#[derive(Clone, Debug)]
pub struct Scanner {
    grammar: Grammar,
    stack: Vec<Kind>,
    expect: Expect,
    token: Token,
    number: String,
    pos: usize,
    pending: Option<usize>,
    esc_at: usize,
    high_at: usize,
    string_start: usize,
    error: Option<ScanError>,
}

fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    /// A scanner whose value starts at byte `start` of the answer.
    pub fn new(grammar: Grammar, start: usize) -> Scanner {
        Scanner {
            grammar,
            stack: Vec::new(),
            expect: Expect::RootValue,
            token: Token::None,
            number: String::new(),
            pos: start,
            pending: None,
            esc_at: start,
            high_at: start,
            string_start: start,
            error: None,
        }
    }

    /// The byte offset of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn error(&self) -> Option<&ScanError> {
        self.error.as_ref()
    }

    pub fn expect(&self) -> Expect {
        self.expect
    }

    /// The open containers, outermost first.
    pub fn stack(&self) -> &[Kind] {
        &self.stack
    }

    /// Where the uncommitted tail of the innermost container starts (a `,`, a key, a value token),
    /// which a repair drops unless the token in progress is kept.
    pub fn pending(&self) -> Option<usize> {
        self.pending
    }

    /// The text of the number in progress.
    pub fn number_text(&self) -> &str {
        &self.number
    }

    pub fn open_token(&self) -> OpenToken {
        match self.token {
            Token::None => OpenToken::None,
            Token::Str { key: true, .. } => OpenToken::KeyString,
            Token::Str { key: false, esc, high } => OpenToken::ValueString {
                start: self.string_start,
                partial_escape: match (high, esc) {
                    (Some(_), _) => Some(self.high_at),
                    (None, Esc::None) => None,
                    (None, _) => Some(self.esc_at),
                },
            },
            Token::Num(num) => OpenToken::Number { valid: num.valid() },
            Token::Lit { .. } => OpenToken::Literal,
        }
    }

    /// The root value is complete if the text ended here: done, or a root number that is valid.
    pub fn complete_at_end(&self) -> bool {
        self.expect == Expect::Done || (self.stack.is_empty() && self.open_token() == OpenToken::Number { valid: true })
    }

    fn fail(&mut self, message: impl Into<String>) -> Fed {
        self.error = Some(ScanError { at: self.pos, message: message.into(), fatal: false });
        Fed::Failed
    }

    /// Reads `chunk`, the text that starts at [`Scanner::pos`].
    pub fn feed<S: Sink>(&mut self, chunk: &str, sink: &mut S) -> Fed {
        if self.error.is_some() {
            return Fed::Failed;
        }
        if self.expect == Expect::Done {
            return Fed::Done(0);
        }
        let bytes = chunk.as_bytes();
        let mut i = 0;
        while let Some(&byte) = bytes.get(i) {
            let step = match self.token {
                Token::Str { .. } => {
                    let read = self.string(chunk, i, sink);
                    self.pos += read;
                    i += read;
                    if self.error.is_some() {
                        return Fed::Failed;
                    }
                    if self.expect == Expect::Done {
                        return Fed::Done(i);
                    }
                    continue;
                }
                Token::Num(num) => self.number_byte(num, byte, sink),
                Token::Lit { word, matched, lit } => self.literal_byte(word, matched, lit, byte, sink),
                Token::None => self.structural(byte, sink),
            };
            match step {
                Step::Consumed => {
                    i += 1;
                    self.pos += 1;
                }
                Step::Again => {}
                Step::Failed => return Fed::Failed,
            }
            if self.expect == Expect::Done {
                return Fed::Done(i);
            }
        }
        Fed::More
    }

    fn number_byte<S: Sink>(&mut self, num: Num, byte: u8, sink: &mut S) -> Step {
        let next = match (num, byte) {
            (Num::Minus, b'0') => Num::Zero,
            (Num::Minus, b'1'..=b'9') | (Num::Int, b'0'..=b'9') => Num::Int,
            (Num::Minus, b'I') if self.grammar.python_constants => {
                self.token = Token::Lit { word: b"Infinity", matched: 1, lit: Lit::NegInfinity };
                return Step::Consumed;
            }
            (Num::Zero | Num::Int, b'.') => Num::Dot,
            (Num::Dot | Num::Frac, b'0'..=b'9') => Num::Frac,
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Num::E,
            (Num::E, b'+' | b'-') => Num::ESign,
            (Num::E | Num::ESign | Num::Exp, b'0'..=b'9') => Num::Exp,
            (Num::Zero, b'0'..=b'9') => return Step::fail(self, "leading zero in number"),
            _ if num.valid() => {
                self.token = Token::None;
                if !sink.number(&self.number) {
                    return Step::fail(self, format!("number out of range: {}", self.number));
                }
                self.value_done();
                return Step::Again;
            }
            _ => return Step::fail(self, "invalid number"),
        };
        self.number.push(byte as char);
        self.token = Token::Num(next);
        Step::Consumed
    }

    fn literal_byte<S: Sink>(&mut self, word: &'static [u8], matched: usize, lit: Lit, byte: u8, sink: &mut S) -> Step {
        if word.get(matched) != Some(&byte) {
            return Step::fail(self, "invalid literal");
        }
        if matched + 1 == word.len() {
            self.token = Token::None;
            sink.literal(lit);
            self.value_done();
        } else {
            self.token = Token::Lit { word, matched: matched + 1, lit };
        }
        Step::Consumed
    }

    fn structural<S: Sink>(&mut self, byte: u8, sink: &mut S) -> Step {
        if is_ws(byte) {
            return Step::Consumed;
        }
        let top = self.stack.last().copied();
        match (self.expect, byte) {
            (Expect::ValueOrClose, b']') => self.close(sink),
            (Expect::ArrayValue, b']') | (Expect::Key, b'}') if self.grammar.trailing_commas => {
                sink.trailing_comma(self.pending.unwrap_or(self.pos));
                self.close(sink)
            }
            (Expect::RootValue | Expect::ValueOrClose | Expect::ArrayValue | Expect::ObjectValue, _) => {
                self.value(byte, sink)
            }
            (Expect::KeyOrClose, b'}') => self.close(sink),
            (Expect::KeyOrClose | Expect::Key, b'"') => {
                if self.expect == Expect::KeyOrClose {
                    self.pending = Some(self.pos);
                }
                self.token = Token::Str { key: true, esc: Esc::None, high: None };
                sink.string_start(true);
                Step::Consumed
            }
            (Expect::KeyOrClose | Expect::Key, _) => Step::fail(self, "expected a string key"),
            (Expect::Colon, b':') => {
                self.expect = Expect::ObjectValue;
                Step::Consumed
            }
            (Expect::Colon, _) => Step::fail(self, "expected `:` after the key"),
            (Expect::CommaOrClose, b',') => {
                self.pending = Some(self.pos);
                self.expect = if top == Some(Kind::Array) { Expect::ArrayValue } else { Expect::Key };
                Step::Consumed
            }
            (Expect::CommaOrClose, b']') if top == Some(Kind::Array) => self.close(sink),
            (Expect::CommaOrClose, b'}') if top == Some(Kind::Object) => self.close(sink),
            (Expect::CommaOrClose, _) if top == Some(Kind::Array) => Step::fail(self, "expected `,` or `]`"),
            (Expect::CommaOrClose, _) => Step::fail(self, "expected `,` or `}`"),
            (Expect::Done, _) => Step::Again,
        }
    }

    fn value<S: Sink>(&mut self, byte: u8, sink: &mut S) -> Step {
        let kind = match byte {
            b'{' => Some(Kind::Object),
            b'[' => Some(Kind::Array),
            _ => None,
        };
        let python = self.grammar.python_constants;
        let token = match byte {
            b'"' => Token::Str { key: false, esc: Esc::None, high: None },
            b'-' => Token::Num(Num::Minus),
            b'0' => Token::Num(Num::Zero),
            b'1'..=b'9' => Token::Num(Num::Int),
            b't' => Token::Lit { word: b"true", matched: 1, lit: Lit::True },
            b'f' => Token::Lit { word: b"false", matched: 1, lit: Lit::False },
            b'n' => Token::Lit { word: b"null", matched: 1, lit: Lit::Null },
            b'N' if python => Token::Lit { word: b"NaN", matched: 1, lit: Lit::NaN },
            b'I' if python => Token::Lit { word: b"Infinity", matched: 1, lit: Lit::Infinity },
            _ if kind.is_some() => Token::None,
            _ => return Step::fail(self, "expected a value"),
        };
        if kind.is_some() && self.stack.len() >= self.grammar.max_depth {
            self.error = Some(ScanError {
                at: self.pos,
                message: format!("nesting deeper than {} levels", self.grammar.max_depth),
                fatal: true,
            });
            return Step::Failed;
        }
        if matches!(self.expect, Expect::ValueOrClose | Expect::RootValue) {
            self.pending = Some(self.pos);
        }
        sink.value_start(self.pos, self.stack.len());
        match kind {
            Some(kind) => {
                self.stack.push(kind);
                self.pending = None;
                self.expect = if kind == Kind::Array { Expect::ValueOrClose } else { Expect::KeyOrClose };
                sink.open(kind);
            }
            None => {
                if let Token::Num(_) = token {
                    self.number.clear();
                    self.number.push(byte as char);
                }
                if let Token::Str { .. } = token {
                    self.string_start = self.pos;
                    sink.string_start(false);
                }
                self.token = token;
            }
        }
        Step::Consumed
    }

    fn close<S: Sink>(&mut self, sink: &mut S) -> Step {
        self.stack.pop();
        sink.close();
        self.value_done();
        Step::Consumed
    }

    fn value_done(&mut self) {
        self.pending = None;
        self.expect = if self.stack.is_empty() { Expect::Done } else { Expect::CommaOrClose };
    }
}

enum Step {
    Consumed,
    Again,
    Failed,
}

impl Step {
    fn fail(scanner: &mut Scanner, message: impl Into<String>) -> Step {
        scanner.fail(message);
        Step::Failed
    }
}

mod string;
#[cfg(test)]
mod tests;
