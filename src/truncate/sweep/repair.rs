//! The `json-repair` strategy in a sweep, and the lenient parser the `json` strategy shares.
//!
//! Pass 1 (while feeding) splits the cuts into segments of the same state: no candidate, which epoch
//! (candidate), how many items completed, which item is in progress. For a cut inside an item it keeps
//! the builder's content clock; when the item completes, each of its cuts is settled in one step:
//! the repaired item equals the completed one exactly when nothing was added after the cut (same
//! clock, no key repeated later, the token in progress kept whole; a number compared by value). With a
//! check, the repaired item is built and checked only at cuts where its content changed.
//!
//! At the end, with the reference known, a segment's figures are its completed items' prefix counts
//! plus the item in progress: settled by the clock when that item is its reference item, else read
//! once more with a matcher ([`fallback`](super::fallback)).

use std::sync::Arc;

use serde_json::Value;

use super::epochs::{same, Epochs};
use super::fallback::{built_run, matched_run, number_settled};
use crate::output::json::build::{token_kept, OpenItem};
use crate::output::json::items_of;
use crate::output::json::lenient::{Lenient, Phase};
use crate::output::json::scan::OpenToken;
use crate::output::Profile;
use crate::schema::Check;
use crate::truncate::strategy::{passing, prefix, recover, CutFigures, Strategy};

/// A repair at the cut keeps the item in progress.
const KEPT: u8 = 1;
/// The repaired item equals the item as it completed.
const WHOLE: u8 = 2;
/// The repaired item passes the check.
const PASSES: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No candidate (or a fatal error): nothing recovered.
    Nothing,
    /// The root object repeated `"items"`: these cuts are re-parsed from scratch at the end.
    Slow,
    /// `done` items of candidate `epoch` completed, `open` in progress.
    Items { epoch: usize, done: usize, open: Option<Open> },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Open {
    start: usize,
    depth: usize,
    /// Duplicate keys in the candidate at the segment's first cut.
    dups: u64,
    /// Every cut's [`WHOLE`] flag is settled.
    settled: bool,
}

/// Cuts `first..` (up to the next segment's first) share a state.
struct Segment {
    first: usize,
    state: State,
}

/// The token in progress at a cut, as the clock rule needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// None, or a key (which a repair drops and which a value must follow).
    Plain,
    /// A value string (kept with the characters read so far).
    Text,
    /// A valid number starting at `start`.
    Number { start: usize },
    /// A literal or number that a repair drops, but which is part of the item.
    Dropped,
}

/// A cut inside the item in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    cut: usize,
    offset: usize,
    clock: u64,
    token: Token,
}

pub struct RepairTrack {
    lenient: Lenient,
    check: Option<Arc<dyn Check>>,
    segments: Vec<Segment>,
    /// Per cut: [`KEPT`], [`WHOLE`], [`PASSES`].
    flags: Vec<u8>,
    /// The cuts of the open segment not yet settled.
    probes: Vec<Probe>,
    /// With a check: the state the last verdict was for, and the verdict.
    checked: Option<((usize, u64, Token, usize), bool)>,
    /// The repaired item in progress at the end of the answer.
    end_item: Option<Value>,
    /// The whole answer's items when they cannot be read from the epochs.
    end_items: Option<Vec<Value>>,
}

impl RepairTrack {
    pub fn new(cuts: usize, check: Option<Arc<dyn Check>>) -> RepairTrack {
        RepairTrack {
            lenient: Lenient::default(),
            check,
            segments: Vec::new(),
            flags: Vec::with_capacity(cuts),
            probes: Vec::new(),
            checked: None,
            end_item: None,
            end_items: None,
        }
    }

    pub fn lenient(&self) -> &Lenient {
        &self.lenient
    }

    /// Reads `text` (the answer so far) on from where the last call stopped.
    pub fn feed(&mut self, text: &str) {
        self.lenient.feed(text);
    }

    /// The state as the text stands, and whether a repair keeps the item in progress.
    fn state(&self) -> (State, bool) {
        let lenient = &self.lenient;
        let builder = lenient.builder();
        if builder.irregular() {
            return (State::Slow, false);
        }
        if lenient.fatal().is_some() {
            return (State::Nothing, false);
        }
        let (epoch, done) = (lenient.epoch(), builder.items().len());
        match lenient.phase() {
            Phase::Search => (State::Nothing, false),
            Phase::Value => {
                let item = lenient.open_item();
                let open = item.map(|OpenItem { start, depth, .. }| Open {
                    start,
                    depth,
                    dups: builder.dups(),
                    settled: false,
                });
                (State::Items { epoch, done, open }, item.is_some_and(|item| item.kept))
            }
            Phase::After | Phase::Finished => (State::Items { epoch, done, open: None }, false),
        }
    }

    /// Reads the state at the next cut; `answer[..offset]` has been fed.
    pub fn record(&mut self, answer: &str, offset: usize) {
        let cut = self.flags.len();
        let (state, kept) = self.state();
        let same_segment = match (self.segments.last().map(|s| s.state), state) {
            (Some(State::Items { epoch, done, open }), State::Items { epoch: e, done: d, open: o }) => {
                (epoch, done, open.map(|o| o.start)) == (e, d, o.map(|o| o.start))
            }
            (Some(last), state) => last == state,
            (None, _) => false,
        };
        if !same_segment {
            self.settle(answer);
            self.segments.push(Segment { first: cut, state });
        }
        let mut flags = 0;
        if let State::Items { open: Some(open), .. } = state {
            let lenient = &self.lenient;
            let builder = lenient.builder();
            let scanner = lenient.scanner();
            let token = match scanner.open_token() {
                OpenToken::ValueString { .. } => Token::Text,
                OpenToken::Number { .. } if token_kept(scanner) => Token::Number { start: builder.last_start() },
                OpenToken::Number { .. } | OpenToken::Literal => Token::Dropped,
                OpenToken::None | OpenToken::KeyString => Token::Plain,
            };
            let probe = Probe { cut, offset, clock: builder.clock(), token };
            if kept {
                flags |= KEPT;
                if let Some(check) = &self.check {
                    let key = (
                        open.start,
                        probe.clock,
                        token,
                        if matches!(token, Token::Number { .. }) { offset } else { 0 },
                    );
                    let passes = match self.checked {
                        Some((last, passes)) if last == key => passes,
                        _ => {
                            let item = builder.materialise_item(scanner);
                            let passes = item.is_some_and(|item| check.check(&item).is_ok());
                            self.checked = Some((key, passes));
                            passes
                        }
                    };
                    flags |= if passes { PASSES } else { 0 };
                }
            }
            self.probes.push(probe);
        }
        self.flags.push(flags);
    }

    /// Settles the open segment's cuts if its item completed as itself (no key repeated since).
    fn settle(&mut self, answer: &str) {
        let probes = std::mem::take(&mut self.probes);
        let Some(Segment { state: State::Items { epoch, done, open: Some(open) }, .. }) = self.segments.last_mut()
        else {
            self.probes = probes;
            return;
        };
        let mark = self.lenient.epoch_marks(*epoch).get(*done).filter(|mark| mark.start == open.start);
        if let Some(mark) = mark.filter(|mark| mark.dups == open.dups) {
            for probe in &probes {
                let whole = probe.clock == mark.clock
                    && match probe.token {
                        Token::Plain | Token::Text => true,
                        Token::Number { start } => number_settled(answer, start, probe.offset),
                        Token::Dropped => false,
                    };
                if let Some(flags) = self.flags.get_mut(probe.cut) {
                    *flags |= if whole { WHOLE } else { 0 };
                }
            }
            open.settled = true;
        }
        self.probes = probes;
        self.probes.clear();
    }

    /// Call once everything is fed: settles the last segment, keeps the whole answer's open item.
    pub fn finish(&mut self, answer: &str) {
        self.settle(answer);
        let lenient = &self.lenient;
        if lenient.builder().irregular() {
            let value = lenient.value();
            self.end_items = Some(passing(value.map(items_of).unwrap_or_default(), self.check.as_deref()));
        } else if lenient.phase() == Phase::Value && lenient.fatal().is_none() {
            let item = lenient.builder().materialise_item(lenient.scanner());
            let check = self.check.as_deref();
            self.end_item = item.filter(|item| check.is_none_or(|check| check.check(item).is_ok()));
        }
    }

    /// The items of the whole answer (after [`RepairTrack::finish`]).
    pub fn full_items<'a>(&'a self, epochs: &mut Epochs<'a>) -> Vec<&'a Value> {
        if let Some(items) = &self.end_items {
            return items.iter().collect();
        }
        let lenient = &self.lenient;
        if lenient.fatal().is_some() || lenient.phase() == Phase::Search {
            return Vec::new();
        }
        let mut items = epochs.passing_items(lenient.epoch());
        items.extend(self.end_item.as_ref());
        items
    }

    /// The figures at each cut; `offsets` are the cuts' byte offsets.
    pub fn figures(
        &self,
        answer: &str,
        offsets: &[usize],
        profile: Profile,
        epochs: &mut Epochs,
        reference: &[&Value],
    ) -> Vec<CutFigures> {
        let mut figures = vec![CutFigures::default(); self.flags.len()];
        for (at, segment) in self.segments.iter().enumerate() {
            let end = self.segments.get(at + 1).map_or(self.flags.len(), |next| next.first);
            let range = segment.first..end;
            let (Some(out), Some(flags)) = (figures.get_mut(range.clone()), self.flags.get(range.clone())) else {
                continue;
            };
            let (epoch, done, open) = match segment.state {
                State::Nothing => continue,
                State::Slow => {
                    for (figure, &cut) in out.iter_mut().zip(offsets.get(range).unwrap_or_default()) {
                        let items = recover(prefix(answer, cut), Strategy::JsonRepair, profile, self.check.as_ref());
                        let corrupt =
                            items.iter().enumerate().filter(|(at, item)| !same(item, reference.get(*at))).count();
                        *figure = CutFigures { items: items.len(), corrupt };
                    }
                    continue;
                }
                State::Items { epoch, done, open } => (epoch, done, open),
            };
            let passed = epochs.passing(epoch, done);
            let stable = CutFigures { items: passed, corrupt: epochs.corrupt(epoch, done, reference) };
            let Some(open) = open else {
                out.fill(stable);
                continue;
            };
            let target = reference.get(passed).copied();
            let itself = self.lenient.epoch_items(epoch).get(done).is_some_and(|item| same(item, target.as_ref()));
            let figure = |f: u8, kept: bool, equal: bool| {
                let counted = kept && (self.check.is_none() || f & PASSES != 0);
                CutFigures {
                    items: stable.items + usize::from(counted),
                    corrupt: stable.corrupt + usize::from(counted && !equal),
                }
            };
            if open.settled && itself {
                for (out, &f) in out.iter_mut().zip(flags) {
                    *out = figure(f, f & KEPT != 0, f & WHOLE != 0);
                }
                continue;
            }
            let cuts = offsets.get(range).unwrap_or_default();
            let verdicts = matched_run(answer, open.start, open.depth, cuts, target)
                .unwrap_or_else(|| built_run(answer, open.start, open.depth, cuts, target));
            for ((out, &f), (kept, equal)) in out.iter_mut().zip(flags).zip(verdicts) {
                *out = figure(f, kept, equal);
            }
        }
        figures
    }
}
