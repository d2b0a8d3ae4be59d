//! Unit tests of the signature parser: every form of §2.2, the errors and their caret display.

use super::super::{parse, parse_in, Era, SigType, Signature};
use super::*;

fn ok(src: &str) -> Signature {
    parse(src).unwrap_or_else(|error| panic!("{src:?} should parse:\n{error}"))
}

fn err(src: &str) -> SignatureError {
    match parse(src) {
        Ok(sig) => panic!("{src:?} should not parse, got {sig:?}"),
        Err(error) => error,
    }
}

fn list(t: SigType) -> SigType {
    SigType::List(Box::new(t))
}

fn opt(t: SigType) -> SigType {
    SigType::Optional(Box::new(t))
}

fn fields(list: &[(&str, SigType)]) -> SigType {
    SigType::Fields(list.iter().map(|(n, t)| ((*n).to_owned(), t.clone())).collect())
}

#[test]
fn the_three_forms() {
    let full = ok("(query :string, limit :int) -> {count :int, items [{id :int}]}");
    assert_eq!(full.params, vec![("query".into(), SigType::String), ("limit".into(), SigType::Int)]);
    assert_eq!(full.returns, fields(&[("count", SigType::Int), ("items", list(fields(&[("id", SigType::Int)])))]));
    assert_eq!(ok("() -> :string"), Signature { params: vec![], returns: SigType::String });
    assert_eq!(ok("{count :int}"), ok("() -> {count :int}"));
    assert_eq!(ok("[:string]").returns, list(SigType::String));
}

#[test]
fn arrow_without_parens_is_rejected() {
    let error = err("-> :string");
    assert_eq!((error.column, error.found.as_str()), (1, "`->`"));
}

#[test]
fn every_primitive_and_the_later_additions() {
    for (word, ty) in [
        ("string", SigType::String),
        ("int", SigType::Int),
        ("float", SigType::Float),
        ("bool", SigType::Bool),
        ("boolean", SigType::Bool),
        ("keyword", SigType::Keyword),
        ("map", SigType::Map),
        ("any", SigType::Any),
        ("datetime", SigType::Datetime),
    ] {
        assert_eq!(ok(&format!(":{word}")).returns, ty, "{word}");
    }
    for word in ["datetime", "boolean"] {
        let error = parse_in(&format!("{{at :{word}}}"), Era::JsonMode).err();
        assert!(error.is_some_and(|e| e.found == format!("`:{word}`")), "{word} is later than JSON mode");
    }
}

#[test]
fn whitespace_anywhere_between_tokens_and_none_needed() {
    assert_eq!(ok("  ( \n\tid :int\r\n ) \n->\t:string  "), ok("(id :int) -> :string"));
    assert_eq!(ok("{id:int,name:string}"), ok("{id :int, name :string}"));
    assert_eq!(ok("[ :int ]"), ok("[:int]"));
}

#[test]
fn identifiers_keep_hyphens_and_leading_underscores() {
    assert_eq!(ok("{user-id :int}").returns, fields(&[("user-id", SigType::Int)]));
    assert_eq!(ok("{_ids [:int]}").returns, fields(&[("_ids", list(SigType::Int))]));
    assert_eq!(ok("(a1_b-2 :int) -> :any").params, vec![("a1_b-2".to_owned(), SigType::Int)]);
    let error = err("{1abc :int}");
    assert_eq!((error.column, error.found.as_str()), (2, "`1abc`"));
    assert_eq!(error.expected, ["a field name", "`}`"]);
}

#[test]
fn question_mark_only_right_after_a_primitive() {
    assert_eq!(ok(":string?").returns, opt(SigType::String));
    assert_eq!(ok("[:string?]").returns, list(opt(SigType::String)));
    assert_eq!(ok("{a :int?}").returns, fields(&[("a", opt(SigType::Int))]));
    for (src, column) in [("[:string]?", 10), ("{a :int}?", 9), ("{a {b :int}?}", 12), (":string ?", 9)] {
        let error = err(src);
        assert_eq!((error.column, error.found.as_str()), (column, "`?`"), "{src}");
        assert!(error.hint.is_some_and(|h| h.contains("only follow a primitive")));
    }
}

#[test]
fn maps_lists_nest_and_empty_map_is_allowed() {
    assert_eq!(ok("{}").returns, SigType::Fields(vec![]));
    assert_eq!(ok("[{}]").returns, list(SigType::Fields(vec![])));
    assert_eq!(ok("[[[:int]]]").returns, list(list(list(SigType::Int))));
    assert_eq!(ok("(  ) -> {}").params, vec![]);
}

#[test]
fn no_trailing_comma_and_one_list_element() {
    let error = err("{a :int,}");
    assert_eq!((error.column, error.expected), (9, &["a field name"][..]));
    let error = err("(a :int,) -> :int");
    assert_eq!((error.column, error.expected), (9, &["a parameter name"][..]));
    let error = err("[:int, :string]");
    assert_eq!((error.column, error.expected), (6, &["`]`"][..]));
    assert!(error.hint.is_some());
}

#[test]
fn unknown_type_names_the_token_and_gives_ptcrunners_hint() {
    let error = err("(pending :list) -> :bool");
    assert_eq!((error.line, error.column, error.found.as_str()), (1, 10, "`:list`"));
    let hint = error.hint.unwrap_or_default();
    assert!(hint.starts_with("Hint: Valid types are :string, :int"), "{hint}");
    assert!(hint.contains("For lists use [:type], for maps use {field :type}."));
    for word in ["integer", "number", "array", "object", "unknown", "String"] {
        assert!(err(&format!(":{word}")).hint.is_some(), "{word}");
    }
    let era_hint = parse_in(":list", Era::JsonMode).err().and_then(|e| e.hint).unwrap_or_default();
    assert_eq!(
        era_hint,
        "Hint: Valid types are :string, :int, :float, :bool, :keyword, :map, :any. \
         For lists use [:type], for maps use {field :type}."
    );
}

#[test]
fn errors_say_what_was_expected_and_found() {
    let cases: &[(&str, usize, &[&str], &str)] = &[
        ("", 1, &["`(`", A_TYPE], "end of input"),
        ("   ", 4, &["`(`", A_TYPE], "end of input"),
        ("invalid syntax here", 1, &["`(`", A_TYPE], "`invalid`"),
        ("(id :int -> :string", 10, &["`,`", "`)`"], "`->`"),
        ("(id :)", 6, &["a type name after `:`"], "`)`"),
        ("(id :int) -> :string extra", 22, &["end of input"], "`extra`"),
        ("(id :int) :string", 11, &["`->`"], "`:string`"),
        ("(id) -> :int", 4, &[A_TYPE], "`)`"),
        ("{a :int", 8, &["`,`", "`}`"], "end of input"),
        ("{a :int} é", 10, &["end of input"], "`é`"),
    ];
    for (src, column, expected, found) in cases {
        let error = err(src);
        assert_eq!(error.column, *column, "{src:?}: {error}");
        assert_eq!(error.expected, *expected, "{src:?}");
        assert_eq!(error.found, *found, "{src:?}");
    }
}

#[test]
fn display_puts_a_caret_under_the_column() {
    let shown = err("(items :array) -> :bool").to_string();
    let want = "invalid signature at column 8: expected a type (`:string`, `:int`, …, `[T]` or \
                `{field T}`), found `:array`\n  (items :array) -> :bool\n         ^\nHint: Valid types are";
    assert!(shown.starts_with(want), "{shown}");
    let shown = err("(a :int,\n b :int\n c :int) -> :int").to_string();
    assert!(shown.starts_with("invalid signature at line 3, column 2: expected `,` or `)`, found `c`"));
    assert!(shown.ends_with("\n   c :int) -> :int\n   ^"), "{shown}");
    let shown = err("{a\t:nope}").to_string();
    assert!(shown.contains("\n  {a\t:nope}\n    \t^"), "{shown:?}");
}

#[test]
fn long_lines_and_control_characters_are_cut_and_replaced() {
    let src = format!("{{{} :int, \u{1b}[31m}}", "a".repeat(10_000));
    let error = err(&src);
    assert_eq!(error.column, 10_009);
    assert_eq!(error.found, "`\\u{1b}`");
    assert!(error.excerpt.chars().count() < 100);
    assert!(!error.to_string().contains('\u{1b}'));
    assert!(error.to_string().contains("…"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = "[".repeat(10_000);
    let error = err(&deep);
    assert_eq!(error.column, MAX_DEPTH + 1);
    assert_eq!(error.found, "`[`");
    let deep_maps = "{a ".repeat(10_000);
    assert_eq!(err(&deep_maps).column, 3 * MAX_DEPTH + 1);
    let at_limit = format!("{}:int{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(&at_limit).is_ok());
}

#[test]
fn display_round_trips() {
    for src in [
        "() -> :string",
        "(q :string, n :int?) -> {results [{id :int, tags [:keyword?]}], meta :map, x :any}",
        "() -> [[:float]]",
        "() -> {}",
        "(at :datetime) -> :bool",
    ] {
        let sig = ok(src);
        assert_eq!(sig.to_string(), src);
        assert_eq!(ok(&sig.to_string()), sig);
    }
}

#[test]
fn garbage_never_panics() {
    let inputs = ["\0", "(", ")", "((", "-", "->", ":", "?", "{,}", "[]", "{a}", "(a :int", "\u{feff}:int"];
    for src in inputs {
        assert!(parse(src).is_err(), "{src:?}");
    }
}

mod properties {
    use proptest::prelude::*;

    use super::super::super::{parse, SigType, Signature};

    fn primitive() -> impl Strategy<Value = SigType> {
        let leaf = prop_oneof![
            Just(SigType::String),
            Just(SigType::Int),
            Just(SigType::Float),
            Just(SigType::Bool),
            Just(SigType::Keyword),
            Just(SigType::Map),
            Just(SigType::Any),
            Just(SigType::Datetime),
        ];
        (leaf, any::<bool>()).prop_map(|(t, optional)| if optional { SigType::Optional(Box::new(t)) } else { t })
    }

    fn sig_type() -> impl Strategy<Value = SigType> {
        primitive().prop_recursive(5, 48, 4, |inner| {
            prop_oneof![
                inner.clone().prop_map(|t| SigType::List(Box::new(t))),
                prop::collection::vec(("[a-zA-Z_][a-zA-Z0-9_-]{0,6}", inner), 0..4).prop_map(SigType::Fields),
            ]
        })
    }

    proptest! {
        #[test]
        fn display_then_parse_is_the_identity(
            params in prop::collection::vec(("[a-zA-Z_][a-zA-Z0-9_-]{0,6}", sig_type()), 0..3),
            returns in sig_type(),
        ) {
            let sig = Signature { params, returns };
            prop_assert_eq!(parse(&sig.to_string()).ok(), Some(sig));
        }

        #[test]
        fn any_text_gives_a_signature_or_an_error(text in any::<String>()) {
            if let Err(error) = parse(&text) {
                prop_assert!(error.offset <= text.len());
                prop_assert!(error.to_string().contains('^'));
            }
        }

        #[test]
        fn signature_like_text_gives_a_signature_or_an_error(text in "[(){}\\[\\]:?, a-z>-]{0,40}") {
            match parse(&text) {
                Ok(sig) => prop_assert_eq!(parse(&sig.to_string()).ok(), Some(sig)),
                Err(error) => prop_assert!(error.column >= 1 && error.offset <= text.len()),
            }
        }
    }
}
