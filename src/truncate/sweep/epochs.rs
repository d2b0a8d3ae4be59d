//! The completed items of each candidate (epoch) of the lenient parse, as the `json` and `json-repair`
//! strategies count them: which pass the check (checked once each) and how many of the first `k`
//! differ from the reference, both as prefix counts computed once per epoch.

use std::sync::Arc;

use serde_json::Value;

use crate::output::json::lenient::Lenient;
use crate::schema::Check;

/// Whether `item` equals the reference item `target` (the same item, often: then no walk).
pub fn same(item: &Value, target: Option<&&Value>) -> bool {
    target.is_some_and(|target| std::ptr::eq(item, *target) || item == *target)
}

/// Prefix counts of one epoch's completed items.
#[derive(Default)]
struct Info {
    /// `passing[k]`: how many of the first `k` items pass the check (empty without a check: `k`).
    passing: Vec<usize>,
    /// `corrupt[k]`: how many of the passing ones among the first `k` differ from the reference.
    corrupt: Option<Vec<usize>>,
}

pub struct Epochs<'a> {
    lenient: &'a Lenient,
    check: Option<Arc<dyn Check>>,
    infos: Vec<Info>,
}

impl<'a> Epochs<'a> {
    pub fn new(lenient: &'a Lenient, check: Option<Arc<dyn Check>>) -> Epochs<'a> {
        Epochs { lenient, check, infos: Vec::new() }
    }

    fn info(&mut self, epoch: usize) -> &mut Info {
        if self.infos.len() <= epoch {
            self.infos.resize_with(epoch + 1, Info::default);
        }
        let lenient = self.lenient;
        let info = &mut self.infos[epoch];
        if let (Some(check), true) = (&self.check, info.passing.is_empty()) {
            let items = lenient.epoch_items(epoch);
            info.passing.reserve(items.len() + 1);
            info.passing.push(0);
            let mut passed = 0;
            for item in items {
                passed += usize::from(check.check(item).is_ok());
                info.passing.push(passed);
            }
        }
        info
    }

    /// How many items `epoch` completed.
    pub fn epoch_len(&self, epoch: usize) -> usize {
        self.lenient.epoch_items(epoch).len()
    }

    /// How many of the first `done` items of `epoch` pass the check.
    pub fn passing(&mut self, epoch: usize, done: usize) -> usize {
        let info = self.info(epoch);
        match info.passing.is_empty() {
            true => done,
            false => info.passing.get(done).copied().unwrap_or(0),
        }
    }

    /// The items of `epoch` that pass the check, in order.
    pub fn passing_items(&mut self, epoch: usize) -> Vec<&'a Value> {
        let items = self.lenient.epoch_items(epoch);
        let info = self.info(epoch);
        match info.passing.is_empty() {
            true => items.iter().collect(),
            false => items
                .iter()
                .zip(info.passing.windows(2))
                .filter(|(_, pair)| pair.first() != pair.get(1))
                .map(|(item, _)| item)
                .collect(),
        }
    }

    /// How many of the passing items among the first `done` of `epoch` differ from the reference.
    pub fn corrupt(&mut self, epoch: usize, done: usize, reference: &[&Value]) -> usize {
        let items = self.lenient.epoch_items(epoch);
        let info = self.info(epoch);
        if info.corrupt.is_none() {
            let mut corrupt = Vec::with_capacity(items.len() + 1);
            corrupt.push(0);
            let (mut passed, mut count) = (0, 0);
            for (at, item) in items.iter().enumerate() {
                let passes = info.passing.is_empty() || info.passing.get(at) != info.passing.get(at + 1);
                if passes {
                    count += usize::from(!same(item, reference.get(passed)));
                    passed += 1;
                }
                corrupt.push(count);
            }
            info.corrupt = Some(corrupt);
        }
        info.corrupt.as_ref().and_then(|corrupt| corrupt.get(done)).copied().unwrap_or(0)
    }
}
