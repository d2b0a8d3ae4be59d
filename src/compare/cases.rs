//! Many cases: the comparisons of every test case of the prompt summed into one row per side,
//! agreement counts added up, and each curve's resilience averaged over the cases.

use serde::Serialize;

use super::Comparison;

/// One side's figures summed over the cases.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SideTotals {
    pub label: String,
    pub items: usize,
    pub valid_items: usize,
    /// Output tokens of the cases that reported them.
    pub tokens_out: u64,
    pub total_ms: u64,
    /// Mean time to first token over the cases that had one.
    pub mean_ttft_ms: Option<u64>,
    pub turns_used: u32,
    /// Cases whose final answer passed.
    pub ok_cases: usize,
    /// Cases whose answer was cut off by max tokens (`finish_reason = length`).
    pub cut_off_cases: usize,
}

/// A curve's resilience averaged over the cases.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeanResilience {
    pub label: String,
    pub resilience: f64,
    /// Cases in which this curve recovered nothing at any cut.
    pub never_yields: usize,
}

/// Every case summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub cases: usize,
    pub sides: Vec<SideTotals>,
    pub both: usize,
    pub same: usize,
    pub differ: usize,
    pub only_a: usize,
    pub only_b: usize,
    pub resilience: Vec<MeanResilience>,
    /// Cases where both final answers passed.
    pub ok_cases: usize,
}

/// The totals of `comparisons` (all of the same two prompts).
pub fn totals(comparisons: &[Comparison]) -> Totals {
    let mut totals = Totals { cases: comparisons.len(), ..Totals::default() };
    let Some(first) = comparisons.first() else { return totals };
    for side in 0..2 {
        let mut sum = SideTotals { label: first.sides[side].label.clone(), ..SideTotals::default() };
        let mut ttfts = Vec::new();
        for figures in comparisons.iter().map(|c| &c.sides[side].figures) {
            sum.items += figures.items;
            sum.valid_items += figures.valid_items;
            sum.tokens_out += figures.tokens_out.unwrap_or(0);
            sum.total_ms += figures.total_ms;
            sum.turns_used += figures.turns_used;
            sum.ok_cases += usize::from(figures.ok);
            sum.cut_off_cases += usize::from(figures.finish_reason.as_deref() == Some("length"));
            ttfts.extend(figures.ttft_ms);
        }
        sum.mean_ttft_ms = (!ttfts.is_empty()).then(|| ttfts.iter().sum::<u64>() / ttfts.len() as u64);
        totals.sides.push(sum);
    }
    for comparison in comparisons {
        let a = &comparison.agreement;
        totals.both += a.both;
        totals.same += a.same;
        totals.differ += a.differ;
        totals.only_a += a.only_a;
        totals.only_b += a.only_b;
        totals.ok_cases += usize::from(comparison.ok());
    }
    for (at, curve) in first.chart.curves.iter().enumerate() {
        let curves: Vec<_> = comparisons.iter().filter_map(|c| c.chart.curves.get(at)).collect();
        totals.resilience.push(MeanResilience {
            label: curve.label.clone(),
            resilience: curves.iter().map(|c| c.resilience).sum::<f64>() / curves.len().max(1) as f64,
            never_yields: curves.iter().filter(|c| c.first_yield.is_none()).count(),
        });
    }
    totals
}
