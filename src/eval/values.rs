//! How two JSON values are compared when scoring: strings trimmed and case-folded unless exact,
//! numbers within a tolerance, a missing field the same as null; the canonical text of a key; and the
//! JSON objects written in a text (`contains-json`, a grader's verdict).

use serde_json::Value;

/// The comparison settings of one case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Strings as written (no trimming, no case folding).
    pub exact: bool,
    /// Numbers agree when they differ by at most this much.
    pub tolerance: f64,
}

impl Default for Comparison {
    fn default() -> Comparison {
        Comparison { exact: false, tolerance: 0.0 }
    }
}

impl Comparison {
    /// Whether `got` agrees with `expected` (deeply: every member and element).
    pub fn agree(&self, expected: &Value, got: &Value) -> bool {
        match (expected, got) {
            (Value::String(a), Value::String(b)) => self.text(a) == self.text(b),
            (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
                (Some(a), Some(b)) => a == b || (a - b).abs() <= self.tolerance,
                _ => a == b,
            },
            (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| self.agree(a, b)),
            (Value::Object(a), Value::Object(b)) => {
                let null = Value::Null;
                a.iter().all(|(k, v)| self.agree(v, b.get(k).unwrap_or(&null)))
                    && b.iter().all(|(k, v)| a.contains_key(k) || v.is_null())
            }
            (a, b) => a == b,
        }
    }

    /// A string as compared: trimmed and lower-cased unless exact.
    pub fn text(&self, text: &str) -> String {
        if self.exact {
            text.to_string()
        } else {
            text.trim().to_lowercase()
        }
    }

    /// The canonical text of a key's parts: equal keys, equal text (strings as compared, numbers by
    /// value so `1` and `1.0` meet, objects by sorted keys).
    pub fn key_text(&self, parts: &[&Value]) -> String {
        let mut out = String::new();
        for part in parts {
            self.canonical(part, &mut out);
            out.push('\u{1f}');
        }
        out
    }

    fn canonical(&self, value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push('"');
                out.push_str(&self.text(s).replace('\\', "\\\\").replace('"', "\\\""));
                out.push('"');
            }
            Value::Number(n) => match n.as_f64() {
                Some(f) => out.push_str(&f.to_string()),
                None => out.push_str(&n.to_string()),
            },
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    self.canonical(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut members: Vec<(&String, &Value)> = map.iter().filter(|(_, v)| !v.is_null()).collect();
                members.sort_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (key, member) in members {
                    out.push_str(&format!("{key:?}:"));
                    self.canonical(member, out);
                    out.push(',');
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
}

/// The value at `pointer` in `value`, null when it is missing.
pub fn at<'a>(value: &'a Value, pointer: &str) -> &'a Value {
    const NULL: &Value = &Value::Null;
    value.pointer(pointer).unwrap_or(NULL)
}

/// A value as a report quotes it: compact JSON, cut to `max` characters.
pub fn quote(value: &Value, max: usize) -> String {
    let text = match value {
        Value::Null => "nothing".to_string(),
        other => other.to_string(),
    };
    cut(&text, max)
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// The JSON objects written in `text`: from each `{`, the longest JSON value that parses there.
pub fn json_objects(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find('{') {
        let start = from + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                found.push(value);
                from = start + stream.byte_offset().max(1);
            }
            _ => from = start + 1,
        }
    }
    if found.is_empty() {
        // As promptfoo reads them: an object cut short (its brackets closed) or written as YAML's
        // flow mapping (`{id: 7}`) counts too.
        found.extend(text.match_indices('{').find_map(|(start, _)| lenient_object(&text[start..])));
    }
    found
}

/// The object `text` (starting at a `{`) holds when its open brackets are closed and it is read as
/// YAML: `{"id": 7,` and `{id: 7, name: seven}` are objects; anything else is not.
fn lenient_object(text: &str) -> Option<Value> {
    let mut open = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{' | '[') => open.push(c),
            (None, '}' | ']') => {
                open.pop();
                if open.is_empty() {
                    end = at + 1;
                    break;
                }
            }
            _ => {}
        }
        escaped = false;
    }
    let mut candidate = text[..end].trim_end().trim_end_matches(',').to_string();
    if quote.is_some() {
        return None;
    }
    for bracket in open.iter().rev() {
        candidate.push(if *bracket == '{' { '}' } else { ']' });
    }
    // A bare word in braces (`{ here }`) is YAML's mapping of a key to nothing: not an object written.
    match serde_saphyr::from_str::<Value>(&candidate) {
        Ok(Value::Object(fields)) if fields.values().any(|v| !v.is_null()) => Some(Value::Object(fields)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_fold_unless_exact_and_numbers_meet_within_the_tolerance() {
        let loose = Comparison { exact: false, tolerance: 0.05 };
        assert!(loose.agree(&json!(" Aspirin "), &json!("aspirin")));
        assert!(!Comparison { exact: true, ..loose }.agree(&json!(" Aspirin "), &json!("aspirin")));
        assert!(loose.agree(&json!(24), &json!(24.04)));
        assert!(!loose.agree(&json!(24), &json!(24.06)));
        assert!(Comparison::default().agree(&json!(24), &json!(24.0)));
        assert!(!Comparison::default().agree(&json!(24), &json!("24")));
        // A missing member is the same as null; nested values compare deeply.
        assert!(loose.agree(&json!({"a": "X", "b": null}), &json!({"a": "x"})));
        assert!(!loose.agree(&json!({"a": [1, 2]}), &json!({"a": [1]})));
        assert_eq!(loose.key_text(&[&json!("A "), &json!(1)]), loose.key_text(&[&json!("a"), &json!(1.0)]));
        assert_ne!(loose.key_text(&[&json!("a"), &json!("b")]), loose.key_text(&[&json!("a b")]));
        assert_eq!(quote(&json!("a long string"), 6), "\"a lo…");
    }
}
