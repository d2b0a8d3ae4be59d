//! Unit tests of validation against a signature, PtcRunner's rules and messages (§2.5).

use serde_json::{json, Value};

use super::super::{parse, SigType, Signature};
use super::*;

fn sig(src: &str) -> Signature {
    parse(src).unwrap_or_else(|error| panic!("{error}"))
}

/// (pointer, message) of every issue, or empty when valid.
fn issues(src: &str, value: Value) -> Vec<(String, String)> {
    match sig(src).validate(&value) {
        Ok(()) => vec![],
        Err(list) => list.into_iter().map(|i| (i.path, i.message)).collect(),
    }
}

fn one(pointer: &str, message: &str) -> Vec<(String, String)> {
    vec![(pointer.to_owned(), message.to_owned())]
}

#[test]
fn primitives_and_their_messages() {
    assert_eq!(issues(":int", json!("x")), one("", "expected int, got string"));
    assert_eq!(issues(":int", json!(3.0)), one("", "expected int, got float"));
    assert_eq!(issues(":int", json!(true)), one("", "expected int, got bool"));
    assert_eq!(issues(":int", json!(-7)), vec![]);
    assert_eq!(issues(":int", json!(u64::MAX)), vec![]);
    assert_eq!(issues(":float", json!(42)), vec![]);
    assert_eq!(issues(":float", json!("1.5")), one("", "expected float, got string"));
    assert_eq!(issues(":bool", json!("true")), one("", "expected bool, got string"));
    assert_eq!(issues(":string", json!([])), one("", "expected string, got list"));
    assert_eq!(issues(":string", json!({})), one("", "expected string, got map"));
    assert_eq!(issues(":map", json!([])), one("", "expected map, got list"));
    assert_eq!(issues("{}", json!(1)), one("", "expected map, got int"));
    assert_eq!(issues("[:int]", json!({})), one("", "expected list, got map"));
    for value in [json!(null), json!(1), json!("s"), json!([1]), json!({"a": 1})] {
        assert_eq!(issues(":any", value), vec![]);
    }
}

#[test]
fn null_is_an_atom_to_ptcrunner() {
    assert_eq!(issues(":string", json!(null)), one("", "expected string, got keyword"));
    assert_eq!(issues("{a :int}", json!({"a": null})), one("/a", "expected int, got keyword"));
    assert_eq!(issues(":string?", json!(null)), vec![]);
    // `:keyword` wants an atom: null and booleans are atoms, a JSON string is not.
    assert_eq!(issues(":keyword", json!("pending")), one("", "expected keyword, got string"));
    assert_eq!(issues(":keyword", json!(null)), vec![]);
    assert_eq!(issues(":keyword", json!(false)), vec![]);
}

#[test]
fn maps_are_open_and_missing_fields_reported() {
    assert_eq!(issues("{id :int}", json!({"id": 1, "extra": "x"})), vec![]);
    assert_eq!(
        issues("{id :int, name :string}", json!({})),
        vec![
            ("/id".to_owned(), "expected field, got nil".to_owned()),
            ("/name".to_owned(), "expected field, got nil".to_owned())
        ]
    );
    assert_eq!(issues("{id :int, email :string?}", json!({"id": 1})), vec![]);
    assert_eq!(issues("{email :string?}", json!({"email": 3})), one("/email", "expected string, got int"));
}

#[test]
fn every_error_with_its_path() {
    let got = issues(
        "{results [{id :int, tags [:string]}]}",
        json!({"results": [{"id": "x", "tags": ["a", 2]}, {"tags": []}]}),
    );
    assert_eq!(
        got,
        vec![
            ("/results/0/id".to_owned(), "expected int, got string".to_owned()),
            ("/results/0/tags/1".to_owned(), "expected string, got int".to_owned()),
            ("/results/1/id".to_owned(), "expected field, got nil".to_owned()),
        ]
    );
}

#[test]
fn segments_and_dotted_paths() {
    // Names the grammar cannot spell, built by hand, to show the pointer escapes.
    let inner = SigType::Fields(vec![("c~d".into(), SigType::Int)]);
    let odd =
        Signature { params: vec![], returns: SigType::Fields(vec![("a/b".into(), SigType::List(Box::new(inner)))]) };
    let Err(list) = odd.validate_segments(&json!({"a/b": [{"c~d": "x"}]})) else {
        panic!("should fail");
    };
    assert_eq!(
        list[0].path,
        vec![PathSegment::Field("a/b".into()), PathSegment::Index(0), PathSegment::Field("c~d".into())]
    );
    assert_eq!(list[0].pointer(), "/a~1b/0/c~0d");
    assert_eq!(list[0].dotted_path(), "a/b.0.c~d");
    let root = SigIssue { path: vec![], message: String::new() };
    assert_eq!((root.pointer(), root.dotted_path()), (String::new(), "root".to_owned()));
}

#[test]
fn hyphenated_fields_are_found_under_either_spelling() {
    assert_eq!(issues("{user-id :int}", json!({"user-id": 1})), vec![]);
    assert_eq!(issues("{user-id :int}", json!({"user_id": 1})), vec![]);
    assert_eq!(issues("{user-id :int}", json!({"userid": 1})), one("/user-id", "expected field, got nil"));
}

#[test]
fn datetime_needs_an_offset() {
    for good in ["2026-05-03T09:14:00Z", "2026-05-03T09:14:00.123+02:00", "2024-02-29 23:59:59-0530"] {
        assert!(is_iso8601_with_offset(good), "{good}");
    }
    for bad in ["2026-05-03T09:14:00", "2026-02-30T00:00:00Z", "2026-05-03", "2026-13-01T00:00:00Z", "x"] {
        assert!(!is_iso8601_with_offset(bad), "{bad}");
    }
    assert_eq!(issues(":datetime", json!("yesterday")), one("", "expected datetime, got string"));
    assert_eq!(issues(":datetime?", json!(null)), vec![]);
}

#[test]
fn signature_is_a_check() {
    use crate::schema::Check;
    let s = sig("{n :int}");
    assert_eq!(s.check(&json!({"n": 1})), Ok(None));
    assert!(s.check(&json!({"n": "1"})).is_err());
}
