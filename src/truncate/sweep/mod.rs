//! The one-pass truncation sweep: the figures of every strategy at every cut, by feeding the
//! incremental parsers the text between consecutive cuts and reading their state (never a re-parse
//! per cut), then resolving "corrupt" against the reference once it is known at the full length.
//!
//! Cost: each parser reads the answer once (`json` reads the `json-repair` parser under the lenient
//! profile); reading a state at a cut is a few field reads, and figures are kept as runs where they
//! do not change ([`Runs`]), from the tracks to the [`Sweep`]: memory grows with the cuts where the
//! figures change, not with the cuts (which are walked, not listed: [`Points`]). `json` decodes its
//! value only when its key changes (a bounded number of times, and under `lenient` never: a complete
//! value is "every item of the epoch"). `json-repair` settles each item's cuts from the builder's
//! content clock when the item completes ([`repair`]); items it cannot settle so are read once more
//! against their reference item. No item is copied: the
//! reference is a list of references into the tracks' items (the `jsonl` track reads its items, kept
//! as text by the parser, once, when the answer is all fed).

mod epochs;
mod fallback;
mod json;
mod jsonl;
mod live;
mod repair;
mod runs;

use std::sync::Arc;

use serde::Serialize;

use self::epochs::Epochs;
use self::json::JsonTrack;
use self::jsonl::JsonlTrack;
pub use self::live::{CutItems, Live};
use self::repair::RepairTrack;
pub use self::runs::{Iter, Runs};
use super::points::{Cursor, Points};
use super::strategy::Strategy;
use crate::output::jsonl::cores;
use crate::output::Profile;
use crate::schema::Check;

/// From this many bytes of answer the jsonl track runs on its own thread (a thread costs tens of µs).
const PARALLEL_BYTES: usize = 16 * 1024;

/// The figures of every strategy at every cut of one answer, as runs of cuts with the same figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// How many items the reference (the full answer, best strategy) has.
    pub full_items: usize,
    /// The strategy the reference comes from.
    pub reference: Strategy,
    /// The position of the last cut as the caller counts it (chars, tokens, chunks).
    last_cut: Option<usize>,
    json: Runs,
    json_repair: Runs,
    jsonl: Runs,
}

impl Sweep {
    /// The figures of `strategy` at every cut (by index: `figures(s)[i]`, `.get(i)`, `.iter()`).
    pub fn figures(&self, strategy: Strategy) -> &Runs {
        match strategy {
            Strategy::Json => &self.json,
            Strategy::JsonRepair => &self.json_repair,
            Strategy::Jsonl => &self.jsonl,
        }
    }

    /// How many cuts were swept.
    pub fn cuts(&self) -> usize {
        self.json.len()
    }

    /// The position of the last cut (`None`: no cuts).
    pub fn last_cut(&self) -> Option<usize> {
        self.last_cut
    }

    /// Every cut where the figures of `strategy` change, as `[cut, items, corrupt]`, starting with
    /// the first cut.
    pub fn steps(&self, strategy: Strategy) -> Vec<[usize; 3]> {
        self.figures(strategy).steps()
    }

    /// The mean over all cuts of `(items - corrupt) / full_items` (0.0 with no items or no cuts).
    pub fn resilience(&self, strategy: Strategy) -> f64 {
        self.figures(strategy).resilience(self.full_items)
    }
}

/// Sweeps `answer` at every cut: `cuts` are `(position, byte offset)` pairs in ascending order, the
/// position being what the caller counts (it is only reported in [`Sweep::steps`]), the offset a byte
/// offset into `answer` (clamped to it and moved down to a character boundary; an offset below the
/// previous one is read as the previous one). `check` is the per-ITEM check.
pub fn sweep(answer: &str, cuts: &[(usize, usize)], profile: Profile, check: Option<Arc<dyn Check>>) -> Sweep {
    sweep_points(answer, Points::List(cuts), profile, check)
}

/// Sweeps `answer` at every cut of `points` (see [`sweep`]), walking them without listing them.
pub fn sweep_points(answer: &str, points: Points, profile: Profile, check: Option<Arc<dyn Check>>) -> Sweep {
    let jsonl = || {
        let mut jsonl = JsonlTrack::new(profile, check.clone());
        let mut fed = 0;
        for offset in Cursor::new(answer, points) {
            jsonl.feed(answer.get(fed..offset).unwrap_or_default());
            jsonl.record();
            fed = offset;
        }
        jsonl.feed(answer.get(fed..).unwrap_or_default());
        jsonl.finish();
        jsonl
    };
    let json = || {
        let mut repair = RepairTrack::new(check.clone());
        let mut json = JsonTrack::new(profile, check.clone());
        let mut fed = 0;
        for offset in Cursor::new(answer, points) {
            repair.feed(answer.get(..offset).unwrap_or_default());
            json.feed(answer.get(fed..offset).unwrap_or_default());
            json.record(repair.lenient(), offset);
            repair.record(answer, points, offset);
            fed = offset;
        }
        repair.feed(answer);
        json.feed(answer.get(fed..).unwrap_or_default());
        repair.finish(answer, points);
        json.finish(repair.lenient(), answer.len());
        (json, repair)
    };
    // The jsonl track reads the answer on its own: on a second core when the answer is large enough
    // to pay for a thread (the tracks read the same text and nothing else in common).
    let ((json, repair), jsonl) = if answer.len() >= PARALLEL_BYTES && cores() > 1 {
        std::thread::scope(|scope| {
            let jsonl = scope.spawn(jsonl);
            let json = json();
            (json, jsonl.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        })
    } else {
        (json(), jsonl())
    };
    assemble(answer, points, profile, check, &json, &repair, &jsonl)
}

/// The figures of the tracks once the whole answer is fed (and each track finished): the reference
/// is the strategy that recovers the most items, and "corrupt" is read against it.
fn assemble(
    answer: &str,
    points: Points,
    profile: Profile,
    check: Option<Arc<dyn Check>>,
    json: &JsonTrack,
    repair: &RepairTrack,
    jsonl: &JsonlTrack,
) -> Sweep {
    let mut epochs = Epochs::new(repair.lenient(), check);
    let mut reference = (Strategy::Json, json.full_items(&mut epochs));
    for (strategy, items) in
        [(Strategy::Jsonl, jsonl.full_items()), (Strategy::JsonRepair, repair.full_items(&mut epochs))]
    {
        if items.len() > reference.1.len() {
            reference = (strategy, items);
        }
    }
    let (reference_strategy, reference) = reference;
    let mut figures = [
        json.figures(&mut epochs, &reference),
        repair.figures(answer, points, profile, &mut epochs, &reference),
        jsonl.figures(&reference),
    ];
    for runs in &mut figures {
        runs.place(|cut| points.position(cut));
    }
    let [json, json_repair, jsonl] = figures;
    Sweep {
        full_items: reference.len(),
        reference: reference_strategy,
        last_cut: json.len().checked_sub(1).map(|cut| points.position(cut)),
        json,
        json_repair,
        jsonl,
    }
}

#[cfg(test)]
pub(crate) mod timing;
