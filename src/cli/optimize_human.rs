//! `tunebench optimize`'s human output: progress lines on stderr, the table of candidates (train and
//! held-out pass rate and mean F1, the delta against the baseline with its interval and p-value, the
//! rejected with their reason), the best and how to apply it; every text from a model or a file
//! escaped through `safe_text`.

use crate::optimize::record::{Candidate, Optimization};
use crate::optimize::store::Listed;
use crate::optimize::{Figures, OptimizeEvent};
use crate::safe_text::escape_controls;

/// One progress line on stderr.
pub fn progress(event: &OptimizeEvent) {
    let set = |held_out: bool| if held_out { "held-out" } else { "train" };
    match event {
        OptimizeEvent::Split { train, held_out, .. } => {
            super::note!("optimize: {train} train cases, {held_out} held out");
        }
        OptimizeEvent::Evaluating { candidate, held_out, cells } => {
            super::note!("  {candidate}: running {cells} {} cases", set(*held_out));
        }
        OptimizeEvent::Scored { candidate, held_out, figures } => {
            super::note!("  {candidate}: {} {}", set(*held_out), shown(Some(*figures)));
        }
        OptimizeEvent::Rejected { candidate, reason } => {
            super::note!("  {candidate}: rejected: {}", escape_controls(reason));
        }
        OptimizeEvent::Proposing { candidate } => super::note!("  {candidate}: asking the proposer"),
        OptimizeEvent::Fetching(progress) => super::model::show_progress(progress.clone()),
        OptimizeEvent::Done { cancelled: true } => super::note!("optimize: stopped; what was scored is kept"),
        OptimizeEvent::Done { cancelled: false } | OptimizeEvent::Planned { .. } | OptimizeEvent::Spent { .. } => {}
    }
}

/// `pass 0.50 F1 0.62`, or `-`.
fn shown(figures: Option<Figures>) -> String {
    match figures {
        Some(f) => match f.mean_f1 {
            Some(f1) => format!("pass {:.2} F1 {f1:.2}", f.pass_rate),
            None => format!("pass {:.2}", f.pass_rate),
        },
        None => "-".into(),
    }
}

/// The whole report.
pub fn report(record: &Optimization) -> String {
    let mut out = format!(
        "optimization {} of {} on {}: {} train, {} held-out cases (split {}, seed {})\n\n",
        record.id,
        escape_controls(&record.prompt.path.display().to_string()),
        escape_controls(&record.model),
        record.split.train.len(),
        record.split.held_out.len(),
        record.split.held_out_fraction,
        record.split.seed
    );
    out.push_str(&format!(
        "{:<11} {:<9} {:<20} {:<20} {:<28} {}\n",
        "id", "origin", "train", "held-out", "vs baseline", "rationale"
    ));
    for candidate in std::iter::once(&record.baseline).chain(&record.candidates) {
        out.push_str(&line(candidate, record.best.as_deref()));
    }
    out.push_str(
        "★ best on the held-out cases (the baseline wins a tie) · + on the train front (run on the held-out cases)\n",
    );
    let cost = &record.cost;
    out.push_str(&format!(
        "\ncells scored {} of {} ({} cached, {} in / {} out tokens); proposer calls {} ({} in / {} out tokens)\n",
        record.budget.cells_scored,
        record.budget.cells,
        cost.candidates.cached,
        cost.candidates.tokens_in,
        cost.candidates.tokens_out,
        cost.proposer.calls,
        cost.proposer.tokens_in,
        cost.proposer.tokens_out
    ));
    if let Some(stopped) = &record.stopped {
        out.push_str(&format!("stopped by {}\n", escape_controls(stopped)));
    }
    match record.best.as_deref() {
        Some("baseline") => out.push_str("best: baseline (no candidate beat the prompt on the held-out cases)\n"),
        Some(best) => {
            out.push_str(&format!(
                "best: {best}; write it into the prompt file with `tunebench optimize {} --apply {best}`\n",
                escape_controls(&record.prompt.path.display().to_string())
            ));
            if let Some(candidate) = record.candidate(best) {
                out.push_str(&escape_controls(&candidate.diff));
            }
        }
        None => out.push_str("best: none (the held-out cases were not run)\n"),
    }
    out
}

/// One candidate's row: `★` marks the record's best, `+` a candidate of the train front.
fn line(candidate: &Candidate, best: Option<&str>) -> String {
    let versus = match &candidate.versus_baseline {
        Some(p) => format!("{:+.2} [{:+.2}, {:+.2}] p={:.2}", p.mean_delta, p.ci_low, p.ci_high, p.p_value),
        None => "-".into(),
    };
    let why = match &candidate.rejected {
        Some(reason) => format!("rejected: {reason}"),
        None => candidate.rationale.clone(),
    };
    let front = if candidate.on_front { "+" } else { " " };
    let star = if best == Some(candidate.id.as_str()) { "★" } else { " " };
    format!(
        "{:<11} {:<9} {:<20} {:<20} {:<28} {}\n",
        format!("{}{front}{star}", candidate.id),
        candidate.origin,
        shown(candidate.train),
        shown(candidate.held_out),
        versus,
        escape_controls(&crate::eval::values::cut(&why, 100).replace('\n', " "))
    )
}

/// One optimization in `optimize list`.
pub fn listed_line(item: &Listed) -> String {
    format!(
        "{}  {}  {}  {} candidates ({} rejected)  best {}{}",
        item.id,
        escape_controls(&item.prompt),
        escape_controls(&item.model),
        item.candidates,
        item.rejected,
        item.best.as_deref().unwrap_or("-"),
        if item.cancelled { "  (stopped)" } else { "" }
    )
}
