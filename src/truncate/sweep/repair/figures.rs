//! The `json-repair` figures of a sweep, once the reference is known: each segment's completed
//! items' prefix counts plus the item in progress, settled by the content clock when that item is its
//! reference item, else read once more with a matcher; written as runs, never one entry per cut.

use serde_json::Value;

use super::{RepairTrack, State, KEPT, PASSES, WHOLE};
use crate::output::Profile;
use crate::truncate::points::{Cursor, Points};
use crate::truncate::strategy::{prefix, recover, CutFigures, Strategy};
use crate::truncate::sweep::epochs::{same, Epochs};
use crate::truncate::sweep::fallback::{built_run, matched_run};
use crate::truncate::sweep::runs::Runs;

impl RepairTrack {
    /// The figures at each cut of `points`, as runs.
    pub fn figures(
        &self,
        answer: &str,
        points: Points,
        profile: Profile,
        epochs: &mut Epochs,
        reference: &[&Value],
    ) -> Runs {
        let mut runs = Runs::default();
        let mut flags = self.flags.as_slice();
        for (at, segment) in self.segments.iter().enumerate() {
            let end = self.segments.get(at + 1).map_or(self.cuts, |next| next.first);
            let count = end.saturating_sub(segment.first);
            let cuts = || Cursor::resume(answer, points, segment.first, segment.offset).take(count);
            let (epoch, done, open) = match segment.state {
                State::Nothing => {
                    runs.push(count, CutFigures::default());
                    continue;
                }
                State::Slow => {
                    for cut in cuts() {
                        let items = recover(prefix(answer, cut), Strategy::JsonRepair, profile, self.check.as_ref());
                        let corrupt =
                            items.iter().enumerate().filter(|(at, item)| !same(item, reference.get(*at))).count();
                        runs.push(1, CutFigures { items: items.len(), corrupt });
                    }
                    continue;
                }
                State::Items { epoch, done, open } => (epoch, done, open),
            };
            let passed = epochs.passing(epoch, done);
            let stable = CutFigures { items: passed, corrupt: epochs.corrupt(epoch, done, reference) };
            let Some(open) = open else {
                runs.push(count, stable);
                continue;
            };
            // This segment's flag runs, as `(cuts, flags)`.
            let mine = flags.partition_point(|&(first, _)| first < end);
            let (here, rest) = flags.split_at(mine);
            flags = rest;
            let flag_runs = here.iter().enumerate().map(|(at, &(first, f))| {
                let next = here.get(at + 1).map_or(end, |&(next, _)| next);
                (next - first, f)
            });
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
                for (cuts, f) in flag_runs {
                    runs.push(cuts, figure(f, f & KEPT != 0, f & WHOLE != 0));
                }
                continue;
            }
            let verdicts = matched_run(answer, open.start, open.depth, cuts(), target)
                .unwrap_or_else(|| built_run(answer, open.start, open.depth, cuts(), target));
            zip_runs(flag_runs, verdicts, |cuts, f, (kept, equal)| runs.push(cuts, figure(f, kept, equal)));
        }
        // Every cut has figures (nothing recovered where none were found).
        runs.push(self.cuts.saturating_sub(runs.len()), CutFigures::default());
        runs
    }
}

/// Walks two run lists `(cuts, value)` over the same cuts together: `each(cuts, a, b)` for every
/// stretch of cuts where neither changes.
fn zip_runs<A: Copy, B: Copy>(
    a: impl IntoIterator<Item = (usize, A)>,
    b: impl IntoIterator<Item = (usize, B)>,
    mut each: impl FnMut(usize, A, B),
) {
    let (mut a, mut b) = (a.into_iter(), b.into_iter());
    let (mut left, mut right) = (a.next(), b.next());
    while let (Some((a_cuts, a_value)), Some((b_cuts, b_value))) = (left, right) {
        let cuts = a_cuts.min(b_cuts);
        each(cuts, a_value, b_value);
        left = if a_cuts > cuts { Some((a_cuts - cuts, a_value)) } else { a.next() };
        right = if b_cuts > cuts { Some((b_cuts - cuts, b_value)) } else { b.next() };
    }
}
