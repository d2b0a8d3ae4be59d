//! The `json-repair` strategy in a sweep, and the lenient parser the `json` strategy shares.
//!
//! Pass 1 (while feeding) splits the cuts into segments of the same state: no candidate, which epoch
//! (candidate), how many items completed, which item is in progress. For the cuts inside an item it
//! keeps the builder's content clock, as runs of cuts with the same clock, token kind and flags (a
//! run whose clock was passed can never be whole: it is written out at once); when the item
//! completes, each run is settled in one step: the repaired item equals the completed one exactly
//! when nothing was added after the cut (same clock, no key repeated later, the token in progress
//! kept whole; a number compared by value). With a check, the repaired item is built and checked only
//! at cuts where its content changed. Every cut's flags are kept as runs too: memory follows the
//! changes, never the cuts.
//!
//! At the end, with the reference known, a segment's figures are its completed items' prefix counts
//! plus the item in progress: settled by the clock when that item is its reference item, else read
//! once more with a matcher ([`fallback`](super::fallback)), the segment's cuts walked again from its
//! first one's offset ([`figures`]).

mod figures;

use std::sync::Arc;

use serde_json::Value;

use super::epochs::Epochs;
use super::fallback::number_settled;
use super::live::Passing;
use crate::output::json::build::{token_kept, OpenItem};
use crate::output::json::items_of;
use crate::output::json::lenient::{Lenient, Phase};
use crate::output::json::scan::OpenToken;
use crate::output::Profile;
use crate::schema::Check;
use crate::truncate::points::{Cursor, Points};
use crate::truncate::strategy::{passing, recover, Strategy};

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
    /// The byte offset of cut `first`.
    offset: usize,
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

/// Cuts in a row inside the item in progress with the same clock, token and flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    /// The first cut and its byte offset.
    first: usize,
    offset: usize,
    cuts: usize,
    clock: u64,
    token: Token,
    /// [`KEPT`] and [`PASSES`].
    flags: u8,
}

pub struct RepairTrack {
    lenient: Lenient,
    check: Option<Arc<dyn Check>>,
    segments: Vec<Segment>,
    /// The flags ([`KEPT`], [`WHOLE`], [`PASSES`]) of the cuts inside an item in progress, as runs
    /// `(first cut, flags)`: a run lasts to the next one or to its segment's end.
    flags: Vec<(usize, u8)>,
    /// The open segment's cuts not yet settled, at the latest clock (earlier ones are written out).
    probes: Vec<Probe>,
    /// How many cuts were recorded.
    cuts: usize,
    /// With a check: the state the last verdict was for, and the verdict.
    checked: Option<((usize, u64, Token, usize), bool)>,
    /// The [`KEPT`] and [`PASSES`] flags of the last cut (0 outside an item in progress).
    last_flags: u8,
    /// The repaired item in progress at the end of the answer.
    end_item: Option<Value>,
    /// The whole answer's items when they cannot be read from the epochs.
    end_items: Option<Vec<Value>>,
}

impl RepairTrack {
    pub fn new(check: Option<Arc<dyn Check>>) -> RepairTrack {
        RepairTrack {
            lenient: Lenient::default(),
            check,
            segments: Vec::new(),
            flags: Vec::new(),
            probes: Vec::new(),
            cuts: 0,
            checked: None,
            last_flags: 0,
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

    /// Reads the state at the next cut of `points`; `answer[..offset]` has been fed.
    pub fn record(&mut self, answer: &str, points: Points, offset: usize) {
        let cut = self.cuts;
        self.cuts += 1;
        let (state, kept) = self.state();
        let same_segment = match (self.segments.last().map(|s| s.state), state) {
            (Some(State::Items { epoch, done, open }), State::Items { epoch: e, done: d, open: o }) => {
                (epoch, done, open.map(|o| o.start)) == (e, d, o.map(|o| o.start))
            }
            (Some(last), state) => last == state,
            (None, _) => false,
        };
        if !same_segment {
            self.settle(answer, points);
            self.segments.push(Segment { first: cut, offset, state });
        }
        self.last_flags = 0;
        let State::Items { open: Some(open), .. } = state else {
            return;
        };
        let lenient = &self.lenient;
        let builder = lenient.builder();
        let scanner = lenient.scanner();
        let token = match scanner.open_token() {
            OpenToken::ValueString { .. } => Token::Text,
            OpenToken::Number { .. } if token_kept(scanner) => Token::Number { start: builder.last_start() },
            OpenToken::Number { .. } | OpenToken::Literal => Token::Dropped,
            OpenToken::None | OpenToken::KeyString => Token::Plain,
        };
        let clock = builder.clock();
        let mut flags = 0;
        if kept {
            flags |= KEPT;
            if let Some(check) = &self.check {
                let key = (open.start, clock, token, if matches!(token, Token::Number { .. }) { offset } else { 0 });
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
        self.last_flags = flags;
        // The clock only grows within a segment, and the item's end mark is at least this clock: the
        // cuts read at an earlier clock can never be whole.
        if self.probes.last().is_some_and(|last| last.clock < clock) {
            for probe in std::mem::take(&mut self.probes) {
                self.emit(probe.first, probe.flags);
            }
        }
        match self.probes.last_mut() {
            Some(last) if (last.clock, last.token, last.flags) == (clock, token, flags) => last.cuts += 1,
            _ => self.probes.push(Probe { first: cut, offset, cuts: 1, clock, token, flags }),
        }
    }

    /// The items at the last recorded cut, `text` being the answer so far (live: no reference
    /// needed; a cut after a repeated `"items"` is read from scratch, as the final figures read it).
    pub fn last_items(&self, text: &str, profile: Profile, passing: &mut Passing) -> usize {
        match self.segments.last().map(|segment| segment.state) {
            None | Some(State::Nothing) => 0,
            Some(State::Slow) => recover(text, Strategy::JsonRepair, profile, self.check.as_ref()).len(),
            Some(State::Items { epoch, done, open }) => {
                let passed = passing.count(&self.lenient, self.check.as_deref(), epoch, done);
                let flags = self.last_flags;
                let counted = open.is_some() && flags & KEPT != 0 && (self.check.is_none() || flags & PASSES != 0);
                passed + usize::from(counted)
            }
        }
    }

    /// Writes out the flags of the cuts from `first` on (of the last segment, in order).
    fn emit(&mut self, first: usize, flags: u8) {
        let segment = self.segments.last().map_or(0, |segment| segment.first);
        if self.flags.last().is_none_or(|&(at, last)| at < segment || last != flags) {
            self.flags.push((first, flags));
        }
    }

    /// Settles the open segment's cuts if its item completed as itself (no key repeated since), and
    /// writes out their flags.
    fn settle(&mut self, answer: &str, points: Points) {
        let probes = std::mem::take(&mut self.probes);
        let mut mark_clock = None;
        if let Some(Segment { state: State::Items { epoch, done, open: Some(open) }, .. }) = self.segments.last_mut() {
            let mark = self.lenient.epoch_marks(*epoch).get(*done).filter(|mark| mark.start == open.start);
            if let Some(mark) = mark.filter(|mark| mark.dups == open.dups) {
                mark_clock = Some(mark.clock);
                open.settled = true;
            }
        }
        for probe in probes {
            if mark_clock != Some(probe.clock) {
                self.emit(probe.first, probe.flags);
                continue;
            }
            match probe.token {
                Token::Plain | Token::Text => self.emit(probe.first, probe.flags | WHOLE),
                Token::Dropped => self.emit(probe.first, probe.flags),
                Token::Number { start } => {
                    let cuts = Cursor::resume(answer, points, probe.first, probe.offset).take(probe.cuts);
                    for (at, offset) in cuts.enumerate() {
                        let whole = if number_settled(answer, start, offset) { WHOLE } else { 0 };
                        self.emit(probe.first + at, probe.flags | whole);
                    }
                }
            }
        }
    }

    /// Call once everything is fed: settles the last segment, keeps the whole answer's open item.
    pub fn finish(&mut self, answer: &str, points: Points) {
        self.settle(answer, points);
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
}
