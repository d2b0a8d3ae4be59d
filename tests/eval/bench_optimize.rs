//! `tunebench bench --optimize-only`: the optimizer's line runs an optimization with the cache warm
//! and the very cells it scored as plain evals, every answer from the cache (no wall-clock bound:
//! the figures are the report's, the test pins what they measure).

use super::support::{stderr, tunebench};

#[test]
fn the_optimizer_line_times_the_optimizers_cells_against_the_same_cells_as_plain_evals_all_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let output = tunebench(dir.path())
        .args(["bench", "--optimize-only", "--runs", "1", "--optimize-cases", "6", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let figures: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let line = &figures["eval"]["optimize"];
    let number = |key: &str| line[key].as_f64().unwrap_or_else(|| panic!("{key}: {line}"));
    assert_eq!(number("cases"), 6.0);
    assert!(number("candidates") >= 2.0, "the baseline and at least one mutation: {line}");
    assert_eq!(number("cells"), number("candidates") * 6.0, "every candidate on train and held-out: {line}");
    assert_eq!(number("requests"), 0.0, "the timed runs are answered by the cache: {line}");
    assert!(number("optimize_ms") > 0.0 && number("eval_ms") > 0.0 && number("overhead") > 0.0, "{line}");

    let few = tunebench(dir.path()).args(["bench", "--optimize-only", "--optimize-cases", "3"]).output().unwrap();
    assert_ne!(few.status.code(), Some(0));
    assert!(stderr(&few).contains("--optimize-cases 3"), "{}", stderr(&few));
}
