//! The one-pass truncation sweep: the figures of every strategy at every cut, by feeding the
//! incremental parsers the text between consecutive cuts and reading their state (never a re-parse
//! per cut), then resolving "corrupt" against the reference once it is known at the full length.
//!
//! Cost: each parser reads the answer once (`json` shares the `lenient` parser with `json-repair`
//! under the lenient profile); `json` decodes its value only when its [`Settled`] key changes (a
//! bounded number of times); `json-repair` records completed items as they come and, at the end,
//! reads each item that was open at some cut ONCE more with a [`Matcher`](crate::output::json::matcher)
//! against its reference item (time proportional to the item, not to the cut count). With a check,
//! the open item must be built and checked at each cut inside it (work proportional to the item).

mod jsonl;
mod repair;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use self::jsonl::JsonlTrack;
use self::repair::RepairTrack;
use super::strategy::{corrupt, passing, CutFigures, Strategy};
use crate::output::json::{items_of, JsonParser, Settled};
use crate::output::{OutputParser, Profile};
use crate::schema::Check;

/// The figures of every strategy at every cut of one answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// How many items the reference (the full answer, best strategy) has.
    pub full_items: usize,
    /// The strategy the reference comes from.
    pub reference: Strategy,
    /// The cut positions as the caller counts them (chars, tokens, chunks).
    pub cuts: Vec<usize>,
    pub json: Vec<CutFigures>,
    pub json_repair: Vec<CutFigures>,
    pub jsonl: Vec<CutFigures>,
}

impl Sweep {
    /// The figures of `strategy`, one per cut.
    pub fn figures(&self, strategy: Strategy) -> &[CutFigures] {
        match strategy {
            Strategy::Json => &self.json,
            Strategy::JsonRepair => &self.json_repair,
            Strategy::Jsonl => &self.jsonl,
        }
    }

    /// Every cut where the figures of `strategy` change, as `[cut, items, corrupt]`, starting with
    /// the first cut.
    pub fn steps(&self, strategy: Strategy) -> Vec<[usize; 3]> {
        let mut steps: Vec<[usize; 3]> = Vec::new();
        for (&cut, figures) in self.cuts.iter().zip(self.figures(strategy)) {
            let step = [cut, figures.items, figures.corrupt];
            if steps.last().is_none_or(|last| last[1..] != step[1..]) {
                steps.push(step);
            }
        }
        steps
    }

    /// The mean over all cuts of `(items - corrupt) / full_items` (0.0 with no items or no cuts).
    pub fn resilience(&self, strategy: Strategy) -> f64 {
        let figures = self.figures(strategy);
        if self.full_items == 0 || figures.is_empty() {
            return 0.0;
        }
        let sound: usize = figures.iter().map(|f| f.items.saturating_sub(f.corrupt)).sum();
        sound as f64 / self.full_items as f64 / figures.len() as f64
    }
}

/// The `json` strategy: the profile's value without repair, decoded only when its key changes.
struct JsonTrack {
    last: Option<Settled>,
    outcomes: Vec<Vec<Value>>,
    at_cut: Vec<Option<usize>>,
}

impl JsonTrack {
    fn read(&mut self, parser: &JsonParser, check: Option<&dyn Check>) -> Option<usize> {
        let key = parser.settled()?;
        if self.last != Some(key) || self.outcomes.is_empty() {
            self.last = Some(key);
            let items = parser.settled_value().map(items_of).unwrap_or_default();
            self.outcomes.push(passing(items, check));
        }
        Some(self.outcomes.len() - 1)
    }
}

/// Sweeps `answer` at every cut: `cuts` are `(position, byte offset)` pairs in ascending order, the
/// position being what the caller counts (it is only copied into [`Sweep::cuts`]), the offset a byte
/// offset into `answer` (clamped to it and moved down to a character boundary; an offset below the
/// previous one is read as the previous one). `check` is the per-ITEM check.
pub fn sweep(answer: &str, cuts: &[(usize, usize)], profile: Profile, check: Option<Arc<dyn Check>>) -> Sweep {
    let check_ref = check.as_deref();
    let mut repair = RepairTrack::new(cuts.len());
    // `None` under the lenient profile: the `json-repair` parser is read instead.
    let mut json_parser = (profile != Profile::Lenient).then(|| JsonParser::new(profile, None));
    let mut json = JsonTrack { last: None, outcomes: Vec::new(), at_cut: Vec::with_capacity(cuts.len()) };
    let mut jsonl = JsonlTrack::new(profile, check.clone(), cuts.len());
    let mut fed = 0;
    let mut offsets = Vec::with_capacity(cuts.len());
    for &(_, offset) in cuts {
        let offset = super::strategy::prefix(answer, offset).len().max(fed);
        let chunk = answer.get(fed..offset).unwrap_or_default();
        fed = offset;
        offsets.push(offset);
        repair.feed(chunk);
        if let Some(parser) = &mut json_parser {
            parser.feed(chunk);
        }
        jsonl.feed(chunk);
        let parser = json_parser.as_ref().unwrap_or(repair.parser());
        let outcome = json.read(parser, check_ref);
        json.at_cut.push(outcome);
        repair.record();
        jsonl.record();
    }
    let rest = answer.get(fed..).unwrap_or_default();
    repair.feed(rest);
    if let Some(parser) = &mut json_parser {
        parser.feed(rest);
    }
    jsonl.feed(rest);

    let full_json = {
        let parser = json_parser.as_ref().unwrap_or(repair.parser());
        passing(parser.settled_value().map(items_of).unwrap_or_default(), check_ref)
    };
    let full_repair = repair.full_items(check_ref);
    let full_jsonl = jsonl.full_items();
    let mut reference = (Strategy::Json, full_json);
    for (strategy, items) in [(Strategy::Jsonl, full_jsonl), (Strategy::JsonRepair, full_repair)] {
        if items.len() > reference.1.len() {
            reference = (strategy, items);
        }
    }
    let (reference_strategy, reference) = reference;

    let outcome_corrupt: Vec<usize> = json.outcomes.iter().map(|items| corrupt(items, &reference)).collect();
    let json_figures = json
        .at_cut
        .iter()
        .map(|outcome| match outcome {
            Some(at) => CutFigures {
                items: json.outcomes.get(*at).map_or(0, Vec::len),
                corrupt: outcome_corrupt.get(*at).copied().unwrap_or(0),
            },
            None => CutFigures::default(),
        })
        .collect();
    Sweep {
        full_items: reference.len(),
        reference: reference_strategy,
        cuts: cuts.iter().map(|&(position, _)| position).collect(),
        json: json_figures,
        json_repair: repair.figures(answer, &offsets, profile, check.as_ref(), &reference),
        jsonl: jsonl.figures(&reference),
    }
}

#[cfg(test)]
mod timing;
