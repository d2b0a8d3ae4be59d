//! The `json-repair` strategy in a sweep. Pass 1 (while feeding): the lenient parser's state at each
//! cut, i.e. which candidate (epoch), how many items completed, and the item in progress (where it
//! starts). At the end, with the reference known: completed items are checked and compared once
//! each; every item that was open at some cut is read once more from its start, a [`Matcher`] saying
//! at each of its cuts whether the repaired item is kept and equals its reference item.

use std::sync::Arc;

use serde_json::Value;

use crate::output::json::build::{Builder, OpenItem};
use crate::output::json::lenient::Phase;
use crate::output::json::matcher::Matcher;
use crate::output::json::scan::{Grammar, Scanner, MAX_DEPTH};
use crate::output::json::{items_of, JsonParser};
use crate::output::{OutputParser, Profile};
use crate::schema::Check;
use crate::truncate::strategy::{corrupt, passing, prefix, recover, CutFigures, Strategy};

#[derive(Clone, Copy, Debug)]
enum Rec {
    /// No candidate (or a fatal error): nothing recovered.
    Nothing,
    /// The root object repeated `"items"`: this cut is re-parsed from scratch at the end.
    Slow,
    /// `done` items of candidate `epoch` completed, `open` in progress.
    Items { epoch: usize, done: usize, open: Option<OpenItem> },
}

pub struct RepairTrack {
    parser: JsonParser,
    at_cut: Vec<Rec>,
}

/// Per candidate: how many completed items pass the check, and how many of those are corrupt,
/// among the first `k` (index `k`).
struct Epoch {
    passing_before: Vec<usize>,
    corrupt_before: Vec<usize>,
}

impl RepairTrack {
    pub fn new(cuts: usize) -> RepairTrack {
        RepairTrack { parser: JsonParser::new(Profile::Lenient, None), at_cut: Vec::with_capacity(cuts) }
    }

    pub fn parser(&self) -> &JsonParser {
        &self.parser
    }

    pub fn feed(&mut self, chunk: &str) {
        self.parser.feed(chunk);
    }

    pub fn record(&mut self) {
        let rec = match self.parser.lenient() {
            None => Rec::Nothing,
            Some(lenient) if lenient.builder().irregular() => Rec::Slow,
            Some(lenient) if lenient.fatal().is_some() => Rec::Nothing,
            Some(lenient) => match lenient.phase() {
                Phase::Search => Rec::Nothing,
                Phase::Value => Rec::Items {
                    epoch: lenient.epoch(),
                    done: lenient.builder().items().len(),
                    open: lenient.open_item(),
                },
                Phase::After | Phase::Finished => {
                    Rec::Items { epoch: lenient.epoch(), done: lenient.builder().items().len(), open: None }
                }
            },
        };
        self.at_cut.push(rec);
    }

    /// The items of the whole answer (call once everything is fed).
    pub fn full_items(&self, check: Option<&dyn Check>) -> Vec<Value> {
        let value = self.parser.lenient().and_then(|lenient| lenient.value());
        passing(value.map(items_of).unwrap_or_default(), check)
    }

    fn epoch(&self, epoch: usize, check: Option<&dyn Check>, reference: &[Value]) -> Epoch {
        let items = self.parser.lenient().map(|lenient| lenient.epoch_items(epoch)).unwrap_or_default();
        let mut passing_before = vec![0];
        let mut corrupt_before = vec![0];
        let (mut passed, mut corrupt) = (0, 0);
        for item in items {
            if check.is_none_or(|check| check.check(item).is_ok()) {
                corrupt += usize::from(reference.get(passed) != Some(item));
                passed += 1;
            }
            passing_before.push(passed);
            corrupt_before.push(corrupt);
        }
        Epoch { passing_before, corrupt_before }
    }

    /// The figures at each cut; `offsets` are the cuts' byte offsets.
    pub fn figures(
        &self,
        answer: &str,
        offsets: &[usize],
        profile: Profile,
        check: Option<&Arc<dyn Check>>,
        reference: &[Value],
    ) -> Vec<CutFigures> {
        let check_ref = check.map(|check| &**check);
        let mut epochs: Vec<Option<Epoch>> = Vec::new();
        let mut figures = vec![CutFigures::default(); self.at_cut.len()];
        let mut at = 0;
        while let Some(&rec) = self.at_cut.get(at) {
            let (epoch, done, open) = match rec {
                Rec::Nothing => {
                    at += 1;
                    continue;
                }
                Rec::Slow => {
                    let cut = offsets.get(at).copied().unwrap_or(0);
                    let items = recover(prefix(answer, cut), Strategy::JsonRepair, profile, check);
                    figures[at] = CutFigures { items: items.len(), corrupt: corrupt(&items, reference) };
                    at += 1;
                    continue;
                }
                Rec::Items { epoch, done, open } => (epoch, done, open),
            };
            if epochs.len() <= epoch {
                epochs.resize_with(epoch + 1, || None);
            }
            let info = epochs[epoch].get_or_insert_with(|| self.epoch(epoch, check_ref, reference));
            let passed = info.passing_before.get(done).copied().unwrap_or(0);
            let stable = CutFigures { items: passed, corrupt: info.corrupt_before.get(done).copied().unwrap_or(0) };
            let Some(open) = open else {
                figures[at] = stable;
                at += 1;
                continue;
            };
            // The run of consecutive cuts inside this same open item.
            let run_end = at
                + self.at_cut[at..]
                    .iter()
                    .take_while(|rec| matches!(rec, Rec::Items { epoch: e, open: Some(o), .. } if *e == epoch && o.start == open.start))
                    .count();
            let cuts = offsets.get(at..run_end).unwrap_or_default();
            let target = reference.get(passed);
            let verdicts = match check_ref {
                None => matched_run(answer, open, cuts, target),
                Some(_) => None,
            }
            .unwrap_or_else(|| exact_run(answer, open, cuts, target, check_ref));
            for (figure, (counted, differs)) in figures[at..run_end].iter_mut().zip(verdicts) {
                *figure = CutFigures {
                    items: stable.items + usize::from(counted),
                    corrupt: stable.corrupt + usize::from(counted && differs),
                };
            }
            at = run_end;
        }
        figures
    }
}

fn element_scanner(open: OpenItem) -> Scanner {
    Scanner::new(Grammar { max_depth: MAX_DEPTH.saturating_sub(open.depth), ..Grammar::LENIENT }, open.start)
}

/// `(kept, differs from target)` at each cut, read once with a matcher; `None` if the item repeats
/// a key (equality cannot be followed then).
fn matched_run(answer: &str, open: OpenItem, cuts: &[usize], target: Option<&Value>) -> Option<Vec<(bool, bool)>> {
    let mut scanner = element_scanner(open);
    let mut matcher = Matcher::new(target);
    let mut fed = open.start;
    let mut verdicts = Vec::with_capacity(cuts.len());
    for &cut in cuts {
        scanner.feed(answer.get(fed..cut).unwrap_or_default(), &mut matcher);
        fed = cut.max(fed);
        if matcher.lost() {
            return None;
        }
        let (kept, equal) = matcher.verdict(&scanner);
        verdicts.push((kept, !equal));
    }
    Some(verdicts)
}

/// `(counted, differs from target)` at each cut, building and checking the repaired item.
fn exact_run(
    answer: &str,
    open: OpenItem,
    cuts: &[usize],
    target: Option<&Value>,
    check: Option<&dyn Check>,
) -> Vec<(bool, bool)> {
    let mut scanner = element_scanner(open);
    let mut builder = Builder::new(false);
    let mut fed = open.start;
    let mut verdicts = Vec::with_capacity(cuts.len());
    for &cut in cuts {
        scanner.feed(answer.get(fed..cut).unwrap_or_default(), &mut builder);
        fed = cut.max(fed);
        let value = builder.materialise(&scanner);
        let counted = value.as_ref().is_some_and(|value| check.is_none_or(|check| check.check(value).is_ok()));
        verdicts.push((counted, value.as_ref() != target));
    }
    verdicts
}
