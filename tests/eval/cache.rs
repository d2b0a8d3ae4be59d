//! The response cache in `tunebench eval`: a re-run asks the server only for the cases whose rendered
//! request changed, cached cells say so, `--no-cache` and `--repeat` ask the server again, and an
//! error is never served from the cache.

use crate::support::*;

fn cached_cells(record: &tunebench::eval::EvalRecord) -> Vec<(String, bool)> {
    record.cells.iter().map(|c| (c.case.clone().unwrap_or_default(), c.run.cached)).collect()
}

#[test]
fn a_rerun_asks_only_for_the_case_whose_request_changed() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);

    let first = eval(dir.path(), &prompt, &server, &["--json"]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert_eq!(server.received().len(), 2);
    assert_eq!(cached_cells(&record(&first)), vec![("alpha".into(), false), (BETA.into(), false)]);

    // The same requests again: both answers from the cache, the same scores, no request.
    let second = eval(dir.path(), &prompt, &server, &["--json"]);
    assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
    assert_eq!(server.received().len(), 2);
    let second = record(&second);
    assert_eq!(cached_cells(&second), vec![("alpha".into(), true), (BETA.into(), true)]);
    assert_eq!(second.cells[1].score, record(&first).cells[1].score);
    let human = eval(dir.path(), &prompt, &server, &[]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("2 cached"), "{}", String::from_utf8_lossy(&human.stdout));

    // One case's wording is edited: one request, for that case only.
    prompt_in(dir.path(), &PROMPT.replace("\"ALPHA-TEXT\"", "\"ALPHA-TEXT, edited\""));
    let third = record(&eval(dir.path(), &prompt, &server, &["--json"]));
    assert_eq!(server.received().len(), 3);
    assert!(server.received()[2].body.contains("ALPHA-TEXT, edited"));
    assert_eq!(cached_cells(&third), vec![("alpha".into(), false), (BETA.into(), true)]);

    // --no-cache asks for every case; --repeat takes fresh answers for every repeat.
    let fresh = record(&eval(dir.path(), &prompt, &server, &["--json", "--no-cache"]));
    assert_eq!(server.received().len(), 5);
    assert!(cached_cells(&fresh).iter().all(|(_, cached)| !cached));
    let repeated = record(&eval(dir.path(), &prompt, &server, &["--json", "--repeat", "2"]));
    assert_eq!(server.received().len(), 9);
    assert!(cached_cells(&repeated).iter().all(|(_, cached)| !cached));
}

#[test]
fn a_server_error_is_never_served_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let failing =
        tunebench::provider::wire_server::Reply::status(400, "application/json", r#"{"error":{"message":"boom"}}"#);
    let routes = vec![("ALPHA-TEXT".to_string(), failing.clone()), ("BETA-TEXT".to_string(), failing)];
    let server = runtime.block_on(tunebench::provider::wire_server::WireServer::start_routed(routes)).unwrap();
    let args = ["--json", "--max-turns", "1"];
    let first = eval(dir.path(), &prompt, &server, &args);
    assert_ne!(first.status.code(), Some(0), "{}", stderr(&first));
    let asked = server.received().len();
    assert!(asked >= 2);
    let second = eval(dir.path(), &prompt, &server, &args);
    assert_eq!(second.status.code(), first.status.code(), "{}", stderr(&second));
    assert_eq!(server.received().len(), 2 * asked, "the second eval asked the server again");
    assert!(cached_cells(&record(&second)).iter().all(|(_, cached)| !cached));
}
