//! The `jsonl` strategy in a sweep: the profile's JSONL parser fed cut by cut; the items at a cut
//! are the records judged so far (a prefix of the final list) plus what the pending tail adds
//! ([`JsonlParser::pending_items`]), asked for only when [`JsonlParser::pending_version`] says the
//! tail may have changed. Figures are kept as runs of cuts where they do not change. Each tail is
//! kept once (the parser keeps no copy), and the tail at the end of the answer becomes the end of the
//! whole answer's items rather than a second copy of them.

use std::sync::Arc;

use serde_json::Value;

use super::epochs::same;
use super::runs::Runs;
use crate::output::jsonl::JsonlParser;
use crate::output::{OutputParser, Profile};
use crate::schema::Check;
use crate::truncate::strategy::CutFigures;

pub struct JsonlTrack {
    parser: JsonlParser,
    /// The pending version the tail was last judged at, and what it gave.
    judged: Option<(u64, Option<usize>)>,
    /// Runs of cuts with the same figures: `(first cut, records judged, the tail's items in `tails`)`.
    runs: Vec<(usize, usize, Option<usize>)>,
    cuts: usize,
    tails: Vec<Vec<Value>>,
    /// The items of the whole answer (read once it is all fed).
    full: Vec<Value>,
    /// The tail moved to the end of `full`, and where it starts there.
    moved: Option<(usize, usize)>,
}

impl JsonlTrack {
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>) -> JsonlTrack {
        JsonlTrack {
            parser: JsonlParser::new(profile, check),
            judged: None,
            runs: Vec::new(),
            cuts: 0,
            tails: Vec::new(),
            full: Vec::new(),
            moved: None,
        }
    }

    pub fn feed(&mut self, chunk: &str) {
        self.parser.feed(chunk);
    }

    pub fn record(&mut self) {
        let version = self.parser.pending_version();
        let at = match self.judged {
            Some((judged, at)) if judged == version => at,
            _ => {
                let tail = self.parser.take_pending_items();
                let at = (!tail.is_empty()).then(|| {
                    self.tails.push(tail);
                    self.tails.len() - 1
                });
                self.judged = Some((version, at));
                at
            }
        };
        let judged = self.parser.items().len();
        if self.runs.last().is_none_or(|&(_, j, t)| (j, t) != (judged, at)) {
            self.runs.push((self.cuts, judged, at));
        }
        self.cuts += 1;
    }

    /// The items at the last recorded cut: the records judged and the tail's.
    pub fn last_items(&self) -> usize {
        self.runs
            .last()
            .map_or(0, |&(_, judged, tail)| judged + tail.and_then(|at| self.tails.get(at)).map_or(0, Vec::len))
    }

    /// Judges the tail of the whole answer (call once everything is fed). When its version is the
    /// last one judged, that tail is it (equal versions give equal items): it is moved, not copied.
    pub fn finish(&mut self) {
        self.full = self.parser.items().to_values();
        match self.judged {
            Some((version, at)) if version == self.parser.pending_version() => {
                if let Some(tail) = at.and_then(|at| self.tails.get_mut(at)) {
                    self.moved = at.map(|at| (at, self.full.len()));
                    self.full.append(tail);
                }
            }
            _ => self.full.extend(self.parser.take_pending_items()),
        }
    }

    /// The items of the whole answer (after [`JsonlTrack::finish`]).
    pub fn full_items(&self) -> Vec<&Value> {
        self.full.iter().collect()
    }

    pub fn figures(&self, reference: &[&Value]) -> Runs {
        let mut corrupt_before = Vec::with_capacity(self.full.len() + 1);
        corrupt_before.push(0);
        for (at, item) in self.full.iter().enumerate() {
            let last = corrupt_before.last().copied().unwrap_or(0);
            corrupt_before.push(last + usize::from(!same(item, reference.get(at))));
        }
        let mut figures = Runs::default();
        for (at, &(first, judged, tail)) in self.runs.iter().enumerate() {
            let end = self.runs.get(at + 1).map_or(self.cuts, |&(next, ..)| next);
            let tail = match (tail, self.moved) {
                (Some(at), Some((moved, start))) if at == moved => self.full.get(start..).unwrap_or_default(),
                _ => tail.and_then(|at| self.tails.get(at)).map(Vec::as_slice).unwrap_or_default(),
            };
            let tail_corrupt =
                tail.iter().enumerate().filter(|(at, item)| !same(item, reference.get(judged + at))).count();
            let figure = CutFigures {
                items: judged + tail.len(),
                corrupt: corrupt_before.get(judged).copied().unwrap_or(0) + tail_corrupt,
            };
            figures.push(end.saturating_sub(first), figure);
        }
        figures
    }
}
