//! The signature parser: hand-written recursive descent over PtcRunner's grammar (§2.2), with a
//! nesting cap so no input can overflow the stack, and errors that point at the bad token.

use std::fmt;

use super::types::{SigType, Signature};
use super::Era;

/// Deepest nesting of `[…]` and `{…}` accepted; deeper input is an error, never a stack overflow.
pub const MAX_DEPTH: usize = 256;

const A_TYPE: &str = "a type (`:string`, `:int`, …, `[T]` or `{field T}`)";

/// The tokens of a comma-separated `name T` list: the parameters or a map's fields.
struct FieldList {
    close: u8,
    first: &'static [&'static str],
    after_comma: &'static [&'static str],
    after_field: &'static [&'static str],
}

const PARAMS: FieldList = FieldList {
    close: b')',
    first: &["a parameter name", "`)`"],
    after_comma: &["a parameter name"],
    after_field: &["`,`", "`)`"],
};

const FIELDS: FieldList = FieldList {
    close: b'}',
    first: &["a field name", "`}`"],
    after_comma: &["a field name"],
    after_field: &["`,`", "`}`"],
};

/// A signature that does not parse: where (1-based line and column, in characters), what was
/// expected there, what was found, and a hint when one helps.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct SignatureError {
    /// 1-based line of the bad token (signatures may span lines).
    pub line: usize,
    /// 1-based column of the bad token within its line, in characters.
    pub column: usize,
    /// Byte offset of the bad token in the signature.
    pub offset: usize,
    /// The token(s) the grammar accepts at that point, e.g. ["`,`", "`)`"].
    pub expected: &'static [&'static str],
    /// What is there instead, quoted (e.g. "`:list`"), or "end of input".
    pub found: String,
    /// PtcRunner's "Hint: Valid types are …" for an unknown `:word`, or advice on a misplaced `?`.
    pub hint: Option<&'static str>,
    /// The line of the signature around the error (control characters replaced, long lines cut).
    pub excerpt: String,
    /// Character index in `excerpt` the caret goes under.
    pub caret: usize,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid signature at ")?;
        if self.line > 1 {
            write!(f, "line {}, ", self.line)?;
        }
        write!(f, "column {}: expected ", self.column)?;
        for (index, token) in self.expected.iter().enumerate() {
            if index > 0 {
                f.write_str(if index + 1 == self.expected.len() { " or " } else { ", " })?;
            }
            f.write_str(token)?;
        }
        write!(f, ", found {}\n  {}\n  ", self.found, self.excerpt)?;
        // Tabs stay tabs so the caret lines up under them.
        for c in self.excerpt.chars().take(self.caret) {
            f.write_str(if c == '\t' { "\t" } else { " " })?;
        }
        f.write_str("^")?;
        if let Some(hint) = &self.hint {
            write!(f, "\n{hint}")?;
        }
        Ok(())
    }
}

/// Parses a signature under `era`'s grammar: before [`Era::Later`], `:datetime` and `:boolean` are
/// unknown types, as they were in PtcRunner then.
pub fn parse_in(src: &str, era: Era) -> Result<Signature, SignatureError> {
    let mut parser = Parser { src, pos: 0, era };
    let signature = parser.signature()?;
    parser.skip_ws();
    if parser.pos < src.len() {
        return Err(parser.error(&["end of input"]));
    }
    Ok(signature)
}

struct Parser<'s> {
    src: &'s str,
    pos: usize,
    era: Era,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or_default()
    }

    /// Whitespace is exactly space, tab, `\n` and `\r` (parser.ex:20-25).
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn signature(&mut self) -> Result<Signature, SignatureError> {
        self.skip_ws();
        if !self.eat(b'(') {
            return match self.peek() {
                Some(b':' | b'[' | b'{') => Ok(Signature { params: Vec::new(), returns: self.ty(0)? }),
                _ => Err(self.error(&["`(`", A_TYPE])),
            };
        }
        let params = self.fields(&PARAMS, 0)?;
        self.skip_ws();
        if !self.rest().starts_with("->") {
            return Err(self.error(&["`->`"]));
        }
        self.pos += 2;
        self.skip_ws();
        Ok(Signature { params, returns: self.ty(0)? })
    }

    /// `name T, name T` up to the closing bracket (the opening one is already eaten); no trailing
    /// comma.
    fn fields(&mut self, list: &FieldList, depth: usize) -> Result<Vec<(String, SigType)>, SignatureError> {
        let mut fields = Vec::new();
        self.skip_ws();
        if self.eat(list.close) {
            return Ok(fields);
        }
        let mut expected = list.first;
        loop {
            let name = self.identifier(expected)?;
            self.skip_ws();
            let ty = self.ty(depth)?;
            fields.push((name, ty));
            self.skip_ws();
            if self.eat(list.close) {
                return Ok(fields);
            }
            if !self.eat(b',') {
                return Err(self.error(list.after_field));
            }
            self.skip_ws();
            expected = list.after_comma;
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_-]*` (parser.ex:33-39).
    fn identifier(&mut self, expected: &'static [&'static str]) -> Result<String, SignatureError> {
        let start = self.pos;
        if !matches!(self.peek(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_')) {
            return Err(self.error(expected));
        }
        self.pos += 1;
        while matches!(self.peek(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-')) {
            self.pos += 1;
        }
        Ok(self.src.get(start..self.pos).unwrap_or_default().to_owned())
    }

    /// One type at nesting `depth` (the number of `[`/`{` around it).
    fn ty(&mut self, depth: usize) -> Result<SigType, SignatureError> {
        match self.peek() {
            Some(b'[' | b'{') if depth >= MAX_DEPTH => Err(self.error(&["a type nested at most 256 levels deep"])),
            Some(b'[') => {
                self.pos += 1;
                self.skip_ws();
                let inner = self.ty(depth + 1)?;
                self.skip_ws();
                if !self.eat(b']') {
                    let mut error = self.error(&["`]`"]);
                    if self.peek() == Some(b',') {
                        error.hint = Some("Hint: a list has exactly one element type: `[:type]`.");
                    }
                    return Err(error);
                }
                Ok(SigType::List(Box::new(inner)))
            }
            Some(b'{') => {
                self.pos += 1;
                Ok(SigType::Fields(self.fields(&FIELDS, depth + 1)?))
            }
            Some(b':') => self.primitive(),
            _ => Err(self.error(&[A_TYPE])),
        }
    }

    /// `:keyword` with an optional `?` right after it.
    fn primitive(&mut self) -> Result<SigType, SignatureError> {
        let colon = self.pos;
        self.pos += 1;
        let start = self.pos;
        while matches!(self.peek(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_')) {
            self.pos += 1;
        }
        let word = self.src.get(start..self.pos).unwrap_or_default();
        if word.is_empty() {
            return Err(self.error(&["a type name after `:`"]));
        }
        let later = self.era == Era::Later;
        let ty = match word {
            "string" => SigType::String,
            "int" => SigType::Int,
            "float" => SigType::Float,
            "bool" => SigType::Bool,
            "boolean" if later => SigType::Bool,
            "keyword" => SigType::Keyword,
            "map" => SigType::Map,
            "any" => SigType::Any,
            "datetime" if later => SigType::Datetime,
            _ => {
                self.pos = colon;
                let mut error = self.error(&[A_TYPE]);
                error.hint = Some(valid_types_hint(self.era));
                return Err(error);
            }
        };
        Ok(if self.eat(b'?') { SigType::Optional(Box::new(ty)) } else { ty })
    }

    /// An error at the current position.
    fn error(&self, expected: &'static [&'static str]) -> SignatureError {
        let (found, hint) = match self.rest().chars().next() {
            None => ("end of input".to_owned(), None),
            Some('?') => (
                "`?`".to_owned(),
                Some(
                    "Hint: `?` may only follow a primitive type (`:string?`, `[:string?]`, \
                     `{a :int?}`); a list or map cannot be optional.",
                ),
            ),
            Some(_) => (format!("`{}`", token_at(self.rest())), None),
        };
        let (line, column, excerpt, caret) = locate(self.src, self.pos);
        SignatureError { line, column, offset: self.pos, expected, found, hint, excerpt, caret }
    }
}

/// PtcRunner's hint for an unknown `:word` (parser.ex:210-232), listing the era's types.
fn valid_types_hint(era: Era) -> &'static str {
    if era == Era::Later {
        "Hint: Valid types are :string, :int, :float, :bool, :boolean, :keyword, :map, :any, :datetime. \
         For lists use [:type], for maps use {field :type}."
    } else {
        "Hint: Valid types are :string, :int, :float, :bool, :keyword, :map, :any. \
         For lists use [:type], for maps use {field :type}."
    }
}

/// The token starting `rest` (non-empty), for "found …": a `:word`, a word, `->`, or one character;
/// at most 24 characters, control characters escaped.
fn token_at(rest: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut chars = rest.chars();
    let first = chars.next().unwrap_or(' ');
    let len = if rest.starts_with("->") {
        2
    } else if first == ':' {
        1 + chars.take_while(|&c| is_word(c)).count()
    } else if is_word(first) {
        1 + chars.take_while(|&c| is_word(c)).count()
    } else {
        1
    };
    let mut token: String = rest.chars().take(len.min(24)).flat_map(char::escape_debug).collect();
    if len > 24 {
        token.push('…');
    }
    token
}

/// Line, column (1-based, characters) of byte `pos`, and the excerpt of that line around it with the
/// caret's index in the excerpt.
fn locate(src: &str, pos: usize) -> (usize, usize, String, usize) {
    const BEFORE: usize = 60;
    const AFTER: usize = 30;
    let before = src.get(..pos).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let line = 1 + before.matches('\n').count();
    let prefix = before.get(line_start..).unwrap_or_default();
    let column = prefix.chars().count() + 1;
    let skipped = (column - 1).saturating_sub(BEFORE);
    let tail = src.get(pos..).unwrap_or_default();
    let tail = tail.split('\n').next().unwrap_or_default().trim_end_matches('\r');
    let mut excerpt = String::new();
    if skipped > 0 {
        excerpt.push('…');
    }
    let visible = |c: char| if c.is_control() && c != '\t' { '\u{fffd}' } else { c };
    excerpt.extend(prefix.chars().skip(skipped).map(visible));
    let caret = excerpt.chars().count();
    excerpt.extend(tail.chars().take(AFTER).map(visible));
    if tail.chars().nth(AFTER).is_some() {
        excerpt.push('…');
    }
    (line, column, excerpt, caret)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
