//! The sweep fed as the answer streams: [`Live`] owns the tracks, takes each chunk as a new cut and
//! reports the items every strategy recovers there at once; "corrupt" needs the whole answer as its
//! reference, so it is resolved when the answer ends, where [`Live::finish`] gives exactly the
//! [`Sweep`] that [`sweep_points`](super::sweep_points) gives for the same answer and chunk ends.

use std::sync::Arc;

use serde::Serialize;

use super::json::JsonTrack;
use super::jsonl::JsonlTrack;
use super::repair::RepairTrack;
use super::{assemble, Sweep};
use crate::output::json::lenient::Lenient;
use crate::output::Profile;
use crate::schema::Check;
use crate::truncate::points::{Offsets, Points};
use crate::truncate::strategy::Strategy;

/// The items each strategy recovers at one cut (corrupt is known only at the answer's end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CutItems {
    pub json: usize,
    pub json_repair: usize,
    pub jsonl: usize,
}

impl CutItems {
    pub fn get(&self, strategy: Strategy) -> usize {
        match strategy {
            Strategy::Json => self.json,
            Strategy::JsonRepair => self.json_repair,
            Strategy::Jsonl => self.jsonl,
        }
    }
}

/// How many of the first items of the current epoch pass the check (each item checked once).
#[derive(Default)]
pub(super) struct Passing {
    epoch: Option<usize>,
    /// `prefix[k]`: how many of the first `k` items pass.
    prefix: Vec<usize>,
}

impl Passing {
    /// How many of the first `done` completed items of `epoch` pass `check` (all without one).
    pub(super) fn count(&mut self, lenient: &Lenient, check: Option<&dyn Check>, epoch: usize, done: usize) -> usize {
        let Some(check) = check else { return done };
        if self.epoch != Some(epoch) {
            self.epoch = Some(epoch);
            self.prefix = vec![0];
        }
        let items = lenient.epoch_items(epoch);
        while self.prefix.len() <= done.min(items.len()) {
            let at = self.prefix.len() - 1;
            let passed = self.prefix.last().copied().unwrap_or(0);
            let passes = items.get(at).is_some_and(|item| check.check(item).is_ok());
            self.prefix.push(passed + usize::from(passes));
        }
        self.prefix.get(done).copied().unwrap_or_else(|| self.prefix.last().copied().unwrap_or(0))
    }
}

/// One answer swept as it streams: cut 0 is the empty answer, cut `i` the first `i` chunks.
pub struct Live {
    profile: Profile,
    check: Option<Arc<dyn Check>>,
    text: String,
    ends: Offsets,
    json: JsonTrack,
    repair: RepairTrack,
    jsonl: JsonlTrack,
    passing: Passing,
    items: CutItems,
}

impl Live {
    /// An empty answer read under `profile`; `check` is the per-ITEM check (as for [`sweep`](super::sweep)).
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>) -> Live {
        let mut live = Live {
            profile,
            json: JsonTrack::new(profile, check.clone()),
            repair: RepairTrack::new(check.clone()),
            jsonl: JsonlTrack::new(profile, check.clone()),
            check,
            text: String::new(),
            ends: Offsets::Narrow(Vec::new()),
            passing: Passing::default(),
            items: CutItems::default(),
        };
        live.record();
        live
    }

    /// Reads the state at the end of the text as the next cut.
    fn record(&mut self) {
        let offset = self.text.len();
        let points = Points::Ends(&self.ends);
        self.repair.feed(&self.text);
        self.json.record(self.repair.lenient(), offset);
        self.repair.record(&self.text, points, offset);
        self.jsonl.record();
        let check = self.check.as_deref();
        let lenient = self.repair.lenient();
        self.items = CutItems {
            json: self.json.last_items(lenient, check, &mut self.passing),
            json_repair: self.repair.last_items(&self.text, self.profile, &mut self.passing),
            jsonl: self.jsonl.last_items(),
        };
    }

    /// The next chunk of the answer: a new cut at its end; the items there.
    pub fn push(&mut self, chunk: &str) -> CutItems {
        self.text.push_str(chunk);
        self.ends.push(self.text.len());
        self.json.feed(chunk);
        self.jsonl.feed(chunk);
        self.record();
        self.items
    }

    /// The items at the last cut.
    pub fn items(&self) -> CutItems {
        self.items
    }

    /// How many cuts (the chunks pushed, plus the empty answer).
    pub fn cuts(&self) -> usize {
        self.ends.len() + 1
    }

    /// The answer so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole answer's sweep: corrupt resolved against its reference.
    pub fn finish(mut self) -> Sweep {
        let points = Points::Ends(&self.ends);
        self.repair.finish(&self.text, points);
        self.json.finish(self.repair.lenient(), self.text.len());
        self.jsonl.finish();
        assemble(&self.text, points, self.profile, self.check, &self.json, &self.repair, &self.jsonl)
    }
}
