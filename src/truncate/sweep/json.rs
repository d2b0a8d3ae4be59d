//! The `json` strategy in a sweep: the profile's value without repair, read only when its key says it
//! may have changed (a bounded number of times). Under `lenient` it is the repair track's parser that
//! is read, and a complete value is just "every item of this epoch" (no value built or copied).

use std::sync::Arc;

use serde_json::Value;

use super::epochs::{same, Epochs};
use super::live::Passing;
use super::runs::Runs;
use crate::output::json::lenient::{Lenient, Phase};
use crate::output::json::{items_of, JsonParser, Settled};
use crate::output::{OutputParser, Profile};
use crate::schema::Check;
use crate::truncate::strategy::{passing, CutFigures};

/// What the strategy recovers while the key stands.
enum Outcome {
    /// Every item of this epoch of the lenient parse (the value is complete).
    Epoch(usize),
    /// These items (already filtered by the check).
    Items(Vec<Value>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Lenient { epoch: usize, growing: usize },
    Other(Settled),
}

pub struct JsonTrack {
    /// The profile's own parser; `None` under `lenient`.
    parser: Option<JsonParser>,
    check: Option<Arc<dyn Check>>,
    last: Option<Key>,
    outcomes: Vec<Outcome>,
    /// Runs of cuts with the same outcome: `(first cut, outcome)`.
    runs: Vec<(usize, Option<usize>)>,
    cuts: usize,
    /// The outcome of the whole answer.
    full: Option<usize>,
}

impl JsonTrack {
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>) -> JsonTrack {
        let parser = (profile != Profile::Lenient).then(|| JsonParser::new(profile, None));
        JsonTrack { parser, check, last: None, outcomes: Vec::new(), runs: Vec::new(), cuts: 0, full: None }
    }

    /// Feeds the profile's own parser (nothing under `lenient`).
    pub fn feed(&mut self, chunk: &str) {
        if let Some(parser) = &mut self.parser {
            parser.feed(chunk);
        }
    }

    /// The outcome as the text stands; `lenient` is the repair track's parser, fed `fed` bytes.
    fn read(&mut self, lenient: &Lenient, fed: usize) -> Option<usize> {
        let key = match &self.parser {
            Some(parser) => parser.settled().map(Key::Other),
            None => lenient.complete().then(|| Key::Lenient {
                epoch: lenient.epoch(),
                growing: if lenient.phase() == Phase::Value { fed } else { 0 },
            }),
        }?;
        if self.last != Some(key) || self.outcomes.is_empty() {
            self.last = Some(key);
            let check = self.check.as_deref();
            let outcome = match &self.parser {
                Some(parser) => {
                    Outcome::Items(passing(parser.settled_value().map(items_of).unwrap_or_default(), check))
                }
                None if lenient.phase() != Phase::Value && !lenient.builder().irregular() => {
                    Outcome::Epoch(lenient.epoch())
                }
                None => Outcome::Items(passing(lenient.value().map(items_of).unwrap_or_default(), check)),
            };
            self.outcomes.push(outcome);
        }
        Some(self.outcomes.len() - 1)
    }

    /// Reads the state at the next cut.
    pub fn record(&mut self, lenient: &Lenient, fed: usize) {
        let outcome = self.read(lenient, fed);
        if self.runs.last().is_none_or(|&(_, last)| last != outcome) {
            self.runs.push((self.cuts, outcome));
        }
        self.cuts += 1;
    }

    /// The items at the last recorded cut (live: no reference needed).
    pub fn last_items(&self, lenient: &Lenient, check: Option<&dyn Check>, passing: &mut Passing) -> usize {
        match self.runs.last().and_then(|&(_, outcome)| outcome).and_then(|at| self.outcomes.get(at)) {
            Some(Outcome::Epoch(epoch)) => passing.count(lenient, check, *epoch, lenient.epoch_items(*epoch).len()),
            Some(Outcome::Items(items)) => items.len(),
            None => 0,
        }
    }

    /// Reads the whole answer's outcome (call once everything is fed).
    pub fn finish(&mut self, lenient: &Lenient, fed: usize) {
        self.full = self.read(lenient, fed);
    }

    /// The items of the whole answer (after [`JsonTrack::finish`]).
    pub fn full_items<'a>(&'a self, epochs: &mut Epochs<'a>) -> Vec<&'a Value> {
        match self.full.and_then(|at| self.outcomes.get(at)) {
            Some(Outcome::Epoch(epoch)) => epochs.passing_items(*epoch),
            Some(Outcome::Items(items)) => items.iter().collect(),
            None => Vec::new(),
        }
    }

    pub fn figures(&self, epochs: &mut Epochs, reference: &[&Value]) -> Runs {
        let by_outcome: Vec<CutFigures> = self
            .outcomes
            .iter()
            .map(|outcome| match outcome {
                Outcome::Epoch(epoch) => {
                    let done = epochs.epoch_len(*epoch);
                    CutFigures { items: epochs.passing(*epoch, done), corrupt: epochs.corrupt(*epoch, done, reference) }
                }
                Outcome::Items(items) => CutFigures {
                    items: items.len(),
                    corrupt: items.iter().enumerate().filter(|(at, item)| !same(item, reference.get(*at))).count(),
                },
            })
            .collect();
        let mut figures = Runs::default();
        for (at, &(first, outcome)) in self.runs.iter().enumerate() {
            let end = self.runs.get(at + 1).map_or(self.cuts, |&(next, _)| next);
            let figure = outcome.and_then(|at| by_outcome.get(at)).copied().unwrap_or_default();
            figures.push(end.saturating_sub(first), figure);
        }
        figures
    }
}
