//! The truncation chart's data, made once per sweep: the strategies in the order the charts list them
//! and each one's step line (the editing screen's truncation pane and an eval case's truncation view
//! draw them; the updates make them when a sweep arrives).

use crate::truncate::strategy::Strategy;
use crate::truncate::sweep::Sweep;

/// The strategies in the order the pane lists them.
pub const ORDER: [Strategy; 3] = Strategy::SHOWN;

/// The chart's step lines, one per strategy in [`ORDER`]: a point wherever the items change.
pub fn series(sweep: &Sweep) -> [Vec<(f64, f64)>; 3] {
    ORDER.map(|strategy| {
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last = 0usize;
        for (i, [cut, items, _]) in sweep.steps(strategy).into_iter().enumerate() {
            if i > 0 {
                points.push((cut as f64, last as f64));
            }
            points.push((cut as f64, items as f64));
            last = items;
        }
        if let Some(end) = sweep.last_cut() {
            points.push((end as f64, last as f64));
        }
        points
    })
}
