//! Scanner edge cases: every split of the text reads the same, errors land on the right byte.

use super::*;

#[derive(Default)]
struct Log(Vec<String>);

impl Sink for Log {
    fn value_start(&mut self, at: usize, depth: usize) {
        self.0.push(format!("v{at}@{depth}"));
    }
    fn open(&mut self, kind: Kind) {
        self.0.push(format!("{kind:?}"));
    }
    fn close(&mut self) {
        self.0.push("close".into());
    }
    fn string_start(&mut self, key: bool) {
        self.0.push(if key { "key".into() } else { "str".into() });
    }
    fn string_part(&mut self, part: &str) {
        match self.0.last_mut() {
            Some(last) if last.starts_with('=') => last.push_str(part),
            _ => self.0.push(format!("={part}")),
        }
    }
    fn string_end(&mut self) {
        self.0.push("end".into());
    }
    fn number(&mut self, text: &str) -> bool {
        self.0.push(format!("n{text}"));
        true
    }
    fn literal(&mut self, lit: Lit) {
        self.0.push(format!("{lit:?}"));
    }
    fn trailing_comma(&mut self, at: usize) {
        self.0.push(format!("tc{at}"));
    }
}

fn scan(grammar: Grammar, chunks: &[&str]) -> (Vec<String>, Fed, Option<ScanError>) {
    let mut scanner = Scanner::new(grammar, 0);
    let mut log = Log::default();
    let mut fed = Fed::More;
    for chunk in chunks {
        fed = scanner.feed(chunk, &mut log);
        if fed != Fed::More {
            break;
        }
    }
    (log.0, fed, scanner.error().cloned())
}

#[test]
fn every_split_gives_the_same_events() {
    let text = r#" {"a\n\u00e9\ud83d\ude00": [1, -2.5e+3, true, null, "x\\y"], "b": {}} "#;
    let (whole, fed, error) = scan(Grammar::RFC8259, &[text]);
    assert_eq!(error, None);
    assert_eq!(fed, Fed::Done(text.len() - 1));
    for split in 1..text.len() {
        if !text.is_char_boundary(split) {
            continue;
        }
        let (events, _, error) = scan(Grammar::RFC8259, &[&text[..split], &text[split..]]);
        assert_eq!(error, None);
        assert_eq!(events, whole, "split at {split}");
    }
    assert!(whole.contains(&"=a\né😀".to_string()), "{whole:?}");
}

#[test]
fn errors_point_at_the_offending_byte() {
    let cases = [
        ("[1 2]", 3, "expected `,` or `]`"),
        ("{1: 2}", 1, "expected a string key"),
        ("{\"a\" 1}", 5, "expected `:` after the key"),
        ("[01]", 2, "leading zero in number"),
        ("[1.]", 3, "invalid number"),
        ("[tru]", 4, "invalid literal"),
        ("[\"a\tb\"]", 3, "control character in string"),
        ("[\"\\x\"]", 3, "invalid escape in string"),
        ("[1,]", 3, "expected a value"),
        ("[NaN]", 1, "expected a value"),
    ];
    for (text, at, message) in cases {
        let (_, fed, error) = scan(Grammar::RFC8259, &[text]);
        assert_eq!(fed, Fed::Failed, "{text}");
        let error = error.unwrap_or_else(|| panic!("{text}: no error"));
        assert_eq!((error.at, error.message.as_str()), (at, message), "{text}");
    }
}

#[test]
fn lenient_and_python_grammars() {
    let (events, fed, _) = scan(Grammar::LENIENT, &["[1,]"]);
    assert_eq!(fed, Fed::Done(4));
    assert!(events.contains(&"tc2".to_string()));
    let (events, fed, _) = scan(Grammar::PYTHON, &["[NaN, -Infinity, Infinity]"]);
    assert_eq!(fed, Fed::Done(26));
    assert_eq!(events.iter().filter(|e| e.contains("Inf") || e.contains("NaN")).count(), 3);
}

#[test]
fn ten_thousand_brackets_do_not_overflow() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let (_, fed, error) = scan(Grammar::RFC8259, &[&deep]);
    assert_eq!(fed, Fed::Failed);
    let error = error.expect("too deep");
    assert!(error.fatal && error.at == MAX_DEPTH, "{error:?}");
    let (_, fed, _) = scan(Grammar::PYTHON, &[&deep]);
    assert_eq!(fed, Fed::Done(20_000));
}

#[test]
fn state_at_the_end_says_what_a_repair_needs() {
    let mut scanner = Scanner::new(Grammar::LENIENT, 0);
    scanner.feed("{\"a\": [1, \"x\\u00", &mut NoSink);
    assert_eq!(scanner.stack(), [Kind::Object, Kind::Array]);
    assert_eq!(scanner.open_token(), OpenToken::ValueString { start: 10, partial_escape: Some(12) });
    let mut scanner = Scanner::new(Grammar::RFC8259, 0);
    scanner.feed("12", &mut NoSink);
    assert!(scanner.complete_at_end());
    scanner.feed(".", &mut NoSink);
    assert!(!scanner.complete_at_end());
}
