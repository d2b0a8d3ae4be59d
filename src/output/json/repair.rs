//! Repair of a truncated tail, described: what the lenient profile drops and closes where the text
//! stops, each as a [`Repair`] at its byte offset (the value itself comes from `Builder::materialise`).

use super::build::token_kept;
use super::scan::{Expect, Kind, OpenToken, Scanner};
use crate::output::Repair;

/// The repairs that make the text read so far (`text`, whose end the scanner has reached) one value.
pub fn tail_repairs(text: &str, scanner: &Scanner) -> Vec<Repair> {
    let end = text.len();
    let mut repairs = Vec::new();
    let drop_pending = match scanner.open_token() {
        OpenToken::ValueString { partial_escape, .. } => {
            if let Some(at) = partial_escape {
                let escape = text.get(at..).unwrap_or_default();
                repairs.push(Repair { at, what: format!("dropped incomplete escape `{}`", quote(escape)) });
            }
            repairs.push(Repair { at: end, what: "closed string".into() });
            false
        }
        OpenToken::Number { .. } => !token_kept(scanner),
        OpenToken::KeyString | OpenToken::Literal => true,
        OpenToken::None => {
            matches!(scanner.expect(), Expect::Colon | Expect::ObjectValue | Expect::ArrayValue | Expect::Key)
        }
    };
    if drop_pending && !scanner.stack().is_empty() {
        if let Some(at) = scanner.pending() {
            let dropped = text.get(at..).unwrap_or_default().trim_end();
            let what = if dropped == "," {
                "removed trailing comma".to_string()
            } else {
                format!("dropped incomplete tail `{}`", quote(dropped))
            };
            repairs.push(Repair { at, what });
        }
    }
    for kind in scanner.stack().iter().rev() {
        let what = match kind {
            Kind::Array => "closed array",
            Kind::Object => "closed object",
        };
        repairs.push(Repair { at: end, what: what.into() });
    }
    repairs
}

/// At most 40 characters of `text`, with `…` when cut.
pub fn quote(text: &str) -> String {
    const MAX: usize = 40;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or_default()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::json::build::Builder;
    use crate::output::json::scan::Grammar;
    use serde_json::json;

    fn repair(text: &str) -> (Option<serde_json::Value>, Vec<String>) {
        let mut scanner = Scanner::new(Grammar::LENIENT, 0);
        let mut builder = Builder::new(true);
        scanner.feed(text, &mut builder);
        assert!(scanner.error().is_none(), "{text:?}: {:?}", scanner.error());
        let repairs = tail_repairs(text, &scanner).into_iter().map(|r| format!("{}: {}", r.at, r.what)).collect();
        (builder.materialise(&scanner), repairs)
    }

    #[test]
    fn closes_strings_and_containers() {
        assert_eq!(
            repair(r#"[{"a": "hel"#),
            (
                Some(json!([{"a": "hel"}])),
                vec!["11: closed string".into(), "11: closed object".into(), "11: closed array".into()]
            )
        );
    }

    #[test]
    fn drops_each_kind_of_incomplete_tail() {
        let cases = [
            (r#"{"a": 1, "b"#, json!({"a": 1}), "7: dropped incomplete tail `, \"b`"),
            (r#"{"a": 1, "b":"#, json!({"a": 1}), "7: dropped incomplete tail `, \"b\":`"),
            (r#"{"a": tr"#, json!({}), "1: dropped incomplete tail `\"a\": tr`"),
            ("[1, 1.", json!([1]), "2: dropped incomplete tail `, 1.`"),
            ("[1, -", json!([1]), "2: dropped incomplete tail `, -`"),
            ("[1, 1e", json!([1]), "2: dropped incomplete tail `, 1e`"),
            ("[1, ", json!([1]), "2: removed trailing comma"),
            ("[1e", json!([]), "1: dropped incomplete tail `1e`"),
        ];
        for (text, value, first) in cases {
            let (got, repairs) = repair(text);
            assert_eq!(got, Some(value), "{text}");
            assert_eq!(repairs.first().map(String::as_str), Some(first), "{text}");
        }
    }

    #[test]
    fn keeps_complete_numbers_and_drops_partial_escapes() {
        assert_eq!(repair("[12").0, Some(json!([12])));
        let (value, repairs) = repair(r#"["a\u00"#);
        assert_eq!(value, Some(json!(["a"])));
        assert_eq!(repairs[0], "3: dropped incomplete escape `\\u00`");
        assert_eq!(repair(r#"["\ud83d"#).0, Some(json!([""])));
        assert_eq!(repair(r#"["\ud83d\ude00"#).0, Some(json!(["😀"])));
    }

    #[test]
    fn a_lone_root_fragment_keeps_nothing() {
        assert_eq!(repair("tr").0, None);
        assert_eq!(repair("-").0, None);
        assert_eq!(repair("").0, None);
        assert_eq!(repair("\"ab").0, Some(json!("ab")));
    }
}
