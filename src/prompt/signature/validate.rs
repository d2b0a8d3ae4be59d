//! Validating a value against a signature's return type, PtcRunner's way (signature/validator.ex
//! @ec1a0b9d, §2.5): open maps, `:float` takes integers, every error with its path, PtcRunner's messages.

use std::fmt;

use serde_json::Value;

use super::types::{SigType, Signature};
use crate::schema::SchemaIssue;

/// One step of an error path: a field name or a list index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathSegment {
    Field(String),
    Index(usize),
}

/// A validation error with its path as segments (PtcRunner's `%{path: [...], message: ...}`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SigIssue {
    pub path: Vec<PathSegment>,
    pub message: String,
}

impl SigIssue {
    /// The path as a JSON Pointer (`""` for the root, `"/results/0/id"`).
    pub fn pointer(&self) -> String {
        let mut pointer = String::new();
        for segment in &self.path {
            pointer.push('/');
            match segment {
                PathSegment::Field(name) => pointer.push_str(&name.replace('~', "~0").replace('/', "~1")),
                PathSegment::Index(index) => pointer.push_str(&index.to_string()),
            }
        }
        pointer
    }

    /// The path joined with dots as PtcRunner's JSON-mode feedback writes it (`root` when empty).
    pub fn dotted_path(&self) -> String {
        if self.path.is_empty() {
            return "root".to_owned();
        }
        let parts: Vec<String> = self.path.iter().map(ToString::to_string).collect();
        parts.join(".")
    }
}

impl fmt::Display for PathSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathSegment::Field(name) => f.write_str(name),
            PathSegment::Index(index) => write!(f, "{index}"),
        }
    }
}

impl From<SigIssue> for SchemaIssue {
    fn from(issue: SigIssue) -> Self {
        SchemaIssue { path: issue.pointer(), message: issue.message }
    }
}

impl Signature {
    /// Validates `value` against the return type; `Err` lists every issue, paths as JSON Pointers.
    pub fn validate(&self, value: &Value) -> Result<(), Vec<SchemaIssue>> {
        self.validate_segments(value).map_err(|issues| issues.into_iter().map(SchemaIssue::from).collect())
    }

    /// [`Signature::validate`] with the paths as segments.
    pub fn validate_segments(&self, value: &Value) -> Result<(), Vec<SigIssue>> {
        validate_type(value, &self.returns)
    }
}

/// Validates `value` against one type. Recursion follows the type (whose depth the parser caps),
/// never the value.
pub fn validate_type(value: &Value, ty: &SigType) -> Result<(), Vec<SigIssue>> {
    let mut issues = Vec::new();
    let mut path = Vec::new();
    check(value, ty, &mut path, &mut issues);
    if issues.is_empty() {
        Ok(())
    } else {
        Err(issues)
    }
}

fn check(value: &Value, ty: &SigType, path: &mut Vec<PathSegment>, issues: &mut Vec<SigIssue>) {
    let ok = match ty {
        SigType::String => value.is_string(),
        SigType::Int => value.is_i64() || value.is_u64(),
        SigType::Float => value.is_number(),
        SigType::Bool => value.is_boolean(),
        // An Elixir atom: `nil`, `true` and `false` are atoms; a JSON string is not (no coercion).
        SigType::Keyword => value.is_null() || value.is_boolean(),
        SigType::Map => value.is_object(),
        SigType::Any => true,
        SigType::Datetime => value.as_str().is_some_and(is_iso8601_with_offset),
        SigType::Optional(inner) => {
            if !value.is_null() {
                check(value, inner, path, issues);
            }
            true
        }
        SigType::List(inner) => match value.as_array() {
            Some(items) => {
                for (index, item) in items.iter().enumerate() {
                    path.push(PathSegment::Index(index));
                    check(item, inner, path, issues);
                    path.pop();
                }
                true
            }
            None => false,
        },
        SigType::Fields(fields) => match value.as_object() {
            Some(map) => {
                for (name, field_ty) in fields {
                    path.push(PathSegment::Field(name.clone()));
                    match lookup(map, name) {
                        Some(field) => check(field, field_ty, path, issues),
                        None if matches!(field_ty, SigType::Optional(_)) => {}
                        None => issues.push(issue(path, "expected field, got nil".to_owned())),
                    }
                    path.pop();
                }
                true
            }
            None => false,
        },
    };
    if !ok {
        let expected = match ty {
            SigType::List(_) => "list",
            SigType::Fields(_) => "map",
            other => other.keyword().unwrap_or("any"),
        };
        issues.push(issue(path, format!("expected {expected}, got {}", type_name(value))));
    }
}

fn issue(path: &[PathSegment], message: String) -> SigIssue {
    SigIssue { path: path.to_vec(), message }
}

/// The field `name`: PtcRunner looks it up with `-` normalised to `_` (validator.ex:139-154); the
/// exact name is tried first, so an answer that uses the schema's own `user-id` is found too.
fn lookup<'v>(map: &'v serde_json::Map<String, Value>, name: &str) -> Option<&'v Value> {
    map.get(name).or_else(|| if name.contains('-') { map.get(&name.replace('-', "_")) } else { None })
}

/// PtcRunner's `type_name/1` for a decoded JSON value: `null` is the atom `nil`, hence "keyword".
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::Bool(_) => "bool",
        Value::Null => "keyword",
        Value::Object(_) => "map",
        Value::Array(_) => "list",
    }
}

/// `DateTime.from_iso8601/1` succeeding with an offset (the later `:datetime` coercion):
/// `YYYY-MM-DD`, `T` or space, `HH:MM:SS`, optional fraction, then `Z` or `±HH:MM` / `±HHMM`.
pub fn is_iso8601_with_offset(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(range)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    let fixed = |at: usize, byte: u8| b.get(at) == Some(&byte);
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) =
        (digits(0..4), digits(5..7), digits(8..10), digits(11..13), digits(14..16), digits(17..19))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(fixed(4, b'-') && fixed(7, b'-') && (fixed(10, b'T') || fixed(10, b't') || fixed(10, b' ')))
        || !(fixed(13, b':') && fixed(16, b':'))
        || day == 0
        || day > days
        || hour > 23
        || minute > 59
        || second > 59
    {
        return false;
    }
    let mut at = 19;
    if matches!(b.get(at), Some(b'.' | b',')) {
        let start = at + 1;
        at = start;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return false;
        }
    }
    let offset = b.get(at..).unwrap_or_default();
    match offset {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] | [b'+' | b'-', h1, h2, m1, m2] => {
            [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
                && (*h1 - b'0') * 10 + (*h2 - b'0') < 24
                && (*m1 - b'0') * 10 + (*m2 - b'0') < 60
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
