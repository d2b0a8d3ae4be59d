//! Deltas on hand-made records: the verdict order (fail and truncated beside each other), columns
//! paired only on the same model and structured mode, checks paired by what they are.

use std::path::PathBuf;

use super::*;
use crate::eval::plan::Column;
use crate::eval::record::{CellRecord, RunBrief, FORMAT};
use crate::eval::score::{CaseScore, ItemScores};
use crate::output::ResponseType;
use crate::provider::StructuredMode;

fn column(provider: &str, model: &str, structured: StructuredMode) -> Column {
    Column {
        label: "definitions".into(),
        prompt: "definitions".into(),
        path: PathBuf::from("definitions.toml"),
        response_type: ResponseType::Jsonl,
        twin: false,
        provider: provider.into(),
        model: model.into(),
        base_url: None,
        structured: Some(structured),
    }
}

fn local() -> Column {
    column("local", "SmolLM2-135M-Instruct", StructuredMode::Constrained)
}

fn score(verdict: Verdict, f1: f64, checks: Vec<CheckResult>) -> CaseScore {
    CaseScore {
        verdict,
        items: Some(ItemScores { f1, ..ItemScores::default() }),
        differences: Vec::new(),
        checks,
        recovered: Vec::new(),
        reason: format!("{verdict:?}"),
        field_judges: Vec::new(),
    }
}

/// An eval of one column whose row `i` is case `c{i}` scored `scores[i]`.
fn eval(id: &str, column: Column, scores: Vec<CaseScore>) -> EvalRecord {
    let cells: Vec<CellRecord> = scores
        .into_iter()
        .enumerate()
        .map(|(row, score)| CellRecord {
            row,
            column: 0,
            repeat: 1,
            case: Some(format!("c{row}")),
            score,
            run: RunBrief::default(),
        })
        .collect();
    let mut record = EvalRecord {
        eval: FORMAT,
        id: id.into(),
        started_at_ms: 0,
        duration_ms: 0,
        prompts: Vec::new(),
        columns: vec![column],
        rows: (0..cells.len()).map(|row| Some(format!("c{row}"))).collect(),
        repeat: 1,
        cells,
        totals: Vec::new(),
        groups: Vec::new(),
        cancelled: false,
        batch: None,
        delta: None,
    };
    record.sum_up();
    record
}

fn changes(delta: &Delta) -> Vec<Change> {
    delta.cells.iter().map(|c| c.change).collect()
}

#[test]
fn a_fail_that_became_truncated_is_neither_improved_nor_regressed() {
    use Verdict::{Error, Fail, Pass, Truncated};
    let before = eval("a", local(), vec![score(Fail, 0.5, vec![]), score(Truncated, 0.9, vec![])]);
    let after = eval("b", local(), vec![score(Truncated, 0.9, vec![]), score(Fail, 0.2, vec![])]);
    let delta = delta(&before, &after);
    assert_eq!((delta.improved, delta.regressed, delta.changed), (0, 0, 2), "{delta:?}");
    assert_eq!(changes(&delta), [Change::Changed, Change::Changed]);
    assert_eq!(delta.columns[0].changed, 2);

    // Pass above both, error below both; the order is partial (fail and truncated beside).
    let all = [Error, Fail, Truncated, Pass];
    let before = eval("a", local(), all.iter().map(|&v| score(v, 0.5, vec![])).collect());
    for (index, &now) in all.iter().enumerate() {
        let after = eval("b", local(), all.iter().map(|_| score(now, 0.5, vec![])).collect());
        let got = changes(&super::delta(&before, &after));
        let want: Vec<Change> = all
            .iter()
            .enumerate()
            .map(|(was, _)| match (was, index) {
                (b, a) if b == a => Change::Same,
                (1, 2) | (2, 1) => Change::Changed,
                (b, a) if a > b => Change::Improved,
                _ => Change::Regressed,
            })
            .collect();
        assert_eq!(got, want, "from each verdict to {now:?}");
    }
    assert_eq!(Fail.partial_cmp(&Truncated), None);
    assert!(Pass > Truncated && Truncated > Error && Pass > Fail && Fail > Error);
    assert_eq!(Verdict::worst([Pass, Truncated, Fail]), Some(Fail));
    assert_eq!(Verdict::worst([Truncated, Pass]), Some(Truncated));
    assert_eq!(Verdict::worst([Fail, Error]), Some(Error));
    assert_eq!(Verdict::worst([]), None);
}

#[test]
fn a_column_on_another_model_or_mode_is_new_and_its_baseline_gone_never_regressed() {
    use Verdict::{Fail, Pass};
    let openai = column("openai", "gpt-4o-mini", StructuredMode::JsonSchema);
    let before = eval("a", openai.clone(), vec![score(Pass, 1.0, vec![]), score(Pass, 1.0, vec![])]);
    let after = eval("b", local(), vec![score(Fail, 0.0, vec![]), score(Pass, 1.0, vec![])]);
    let delta = delta(&before, &after);
    assert_eq!((delta.improved, delta.regressed), (0, 0), "{delta:?}");
    assert_eq!(changes(&delta), [Change::New, Change::New, Change::Gone, Change::Gone]);
    let models: Vec<(Option<&str>, Option<&str>)> =
        delta.columns.iter().map(|c| (c.model_before.as_deref(), c.model_after.as_deref())).collect();
    assert_eq!(
        models,
        [(None, Some("local:SmolLM2-135M-Instruct, constrained")), (Some("openai:gpt-4o-mini, json-schema"), None)]
    );

    // The same model in another structured mode is another column too.
    let prompted = column("openai", "gpt-4o-mini", StructuredMode::None);
    let after = eval("c", prompted, vec![score(Fail, 0.0, vec![]), score(Fail, 0.0, vec![])]);
    let delta = super::delta(&before, &after);
    assert_eq!((delta.improved, delta.regressed), (0, 0), "{delta:?}");

    // The same model and mode under a renamed prompt (one column each side) is still its counterpart.
    let renamed = Column { prompt: "definitions-v2".into(), ..openai.clone() };
    let after = eval("d", renamed, vec![score(Fail, 0.0, vec![]), score(Pass, 1.0, vec![])]);
    assert_eq!(changes(&super::delta(&before, &after)), [Change::Regressed, Change::Same]);

    // A record written before the mode was kept matches the same model in any mode.
    let older = Column { structured: None, ..openai };
    let before = eval("e", older, vec![score(Pass, 1.0, vec![]), score(Pass, 1.0, vec![])]);
    let after = eval("f", column("openai", "gpt-4o-mini", StructuredMode::None), vec![score(Fail, 0.0, vec![])]);
    assert_eq!(changes(&super::delta(&before, &after)), [Change::Regressed, Change::Gone]);
}

#[test]
fn a_check_is_paired_by_what_it_is_not_by_its_line() {
    let check = |key: &str, at: &str, passed: bool| CheckResult {
        check: "regex /entity".into(),
        key: key.into(),
        at: at.into(),
        passed,
        message: None,
        weight: None,
        not_evaluated: false,
        graded: None,
    };
    let regex = r#"{"kind":"regex","path":"/entity","pattern":"^[A-Z]"}"#;
    let other = r#"{"kind":"regex","path":"/entity","pattern":"^[a-z]"}"#;
    let before = vec![check(regex, "p.toml:20", true), check(other, "p.toml:24", false)];
    // Both moved three lines down: nothing changed.
    let moved = vec![check(regex, "p.toml:23", true), check(other, "p.toml:27", false)];
    assert_eq!(check_changes(&before, &moved), Vec::new());
    // Their order swapped, and the second now passes: one change, the second check's.
    let swapped = vec![check(other, "p.toml:20", true), check(regex, "p.toml:24", true)];
    let changed = check_changes(&before, &swapped);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!((changed[0].before, changed[0].after, changed[0].at.as_str()), (Some(false), Some(true), "p.toml:20"));
    // A check removed and another added: not run on one side each.
    let replaced = vec![check(regex, "p.toml:20", true)];
    let changed = check_changes(&before, &replaced);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!((changed[0].before, changed[0].after), (Some(false), None));
    // Records older than the key pair by the label.
    let old = vec![check("", "p.toml:20", true), check("", "p.toml:24", false)];
    assert_eq!(check_changes(&old, &old), Vec::new());
}
