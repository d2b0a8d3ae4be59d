//! How a forward pass's work is cut for the pool: matrices split by the cache lines their row groups
//! read (so chunks are even in memory read whatever the quantized forms), chunks no smaller than a
//! share of a thread's part or 512 KiB of weights, and tokens split one a unit.

use std::ops::Range;

use super::super::kernels::{groups, matmul_groups, Activations, Kernels};
use super::super::quant::{Matrix, ROWS};
use super::super::threads::{Disjoint, Pool, CHUNKS_PER_THREAD};
use super::super::EngineError;
use super::pool_err;

/// Chunks per thread of a generated token's matrices: each chunk is one unbroken stretch of weights,
/// and a new one starts the memory's streams again. Two instead of the pool's four: the 0.6B file
/// generated 3% faster where memory gave it room, 1.5% where it did not (one process, the two
/// alternated); a prompt's matrices keep four (a chunk of many tokens' work evens out more).
const STREAM_CHUNKS_PER_THREAD: usize = 2;

/// Chunks per thread of matrices times `tokens` tokens ([`STREAM_CHUNKS_PER_THREAD`] for one).
fn chunks_per_thread(tokens: usize) -> usize {
    if tokens == 1 {
        STREAM_CHUNKS_PER_THREAD
    } else {
        CHUNKS_PER_THREAD
    }
}

/// Bytes of weights below which a chunk of matrices no longer shrinks (the pool's chunks shrink as
/// the work runs out): the 0.6B file's output matrix (128 MB) in chunks of a quarter left the caller
/// waiting 32–66 µs at its end each token; down to 512 KiB, 2–3 µs.
const SMALLEST_CHUNK_BYTES: usize = 512 << 10;

/// Bytes of a cache line: a unit of [`project`]'s splits.
const LINE: usize = 64;

/// The cache lines of one row group of `m`: what a unit of [`project`] weighs (a Q6_K group reads
/// 1.46× a Q4_K one's bytes: chunks even in lines read keep the threads' shares even).
fn group_lines(m: &Matrix) -> usize {
    (m.bytes() / groups(m).max(1)).div_ceil(LINE).max(1)
}

/// The smallest chunk of a split of `units` units of `unit_bytes` bytes of weights each, times
/// `tokens` tokens: [`chunks_per_thread`] chunks a thread, or [`SMALLEST_CHUNK_BYTES`] when that is more.
pub(super) fn smallest_chunk(pool: &Pool, units: usize, unit_bytes: usize, tokens: usize) -> usize {
    pool.smallest_chunk(units, chunks_per_thread(tokens)).min(SMALLEST_CHUNK_BYTES.div_ceil(unit_bytes.max(1)))
}

/// The groups of a matrix (`groups` of `lines` units each, its first at unit `first` of a split) whose
/// first unit is in `units`: each group in exactly one chunk of a split.
fn groups_starting_in(units: Range<usize>, first: usize, lines: usize, groups: usize) -> Range<usize> {
    let group = |unit: usize| unit.saturating_sub(first).div_ceil(lines.max(1)).min(groups);
    group(units.start)..group(units.end)
}

/// Runs `f(t)` for each of `seq` tokens, split across the pool (the tokens' rows are independent).
pub(super) fn per_token(pool: &mut Pool, seq: usize, f: &(dyn Fn(usize) + Sync)) -> Result<(), EngineError> {
    pool.split(seq, 2, &|_, tokens| tokens.for_each(f)).map_err(pool_err)
}

/// Each matrix times the `tokens` activation rows of `x`, into its output (`tokens × rows`, token
/// after token), the row groups of all of them split across the pool's threads, each group weighed
/// by its cache lines ([`group_lines`]).
pub(super) fn project(
    pool: &mut Pool,
    matrices: &[(&Matrix, &Disjoint<'_, f32>)],
    x: Activations<'_>,
    tokens: usize,
    kernels: Kernels,
) -> Result<(), EngineError> {
    let units: usize = matrices.iter().map(|(m, _)| groups(m) * group_lines(m)).sum();
    let smallest = smallest_chunk(pool, units, LINE, tokens);
    pool.split_in(units, 2, smallest, &|_, range| {
        let mut first = 0;
        for (m, out) in matrices {
            let (lines, rows) = (group_lines(m), m.rows);
            let mine = groups_starting_in(range.clone(), first, lines, groups(m));
            if !mine.is_empty() {
                matmul_groups(m, x, tokens, mine, kernels, &mut |t, g, sums| {
                    let at = t * rows + ROWS * g;
                    // SAFETY: each thread writes the rows of its own groups.
                    let out = unsafe { out.slice(at..at + ROWS.min(rows - ROWS * g)) };
                    out.copy_from_slice(&sums[..out.len()]);
                });
            }
            first += groups(m) * lines;
        }
    })
    .map_err(pool_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// However a split of matrices weighed in lines is cut into chunks, every group of every matrix is
    /// in exactly one chunk (the 0.6B file's query, key and value matrices: Q4_K, Q4_K, Q6_K).
    #[test]
    fn every_group_is_in_exactly_one_chunk() {
        for matrices in [vec![(144, 128), (144, 64), (210, 64)], vec![(1, 5)], vec![(7, 3), (1, 1), (300, 2)]] {
            let units: usize = matrices.iter().map(|(lines, groups)| lines * groups).sum();
            let mut state = 17u64;
            for _ in 0..200 {
                let mut cuts: Vec<usize> = (0..5)
                    .map(|_| {
                        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        (state >> 33) as usize % (units + 1)
                    })
                    .chain([0, units])
                    .collect();
                cuts.sort_unstable();
                let mut seen: Vec<Vec<u32>> = matrices.iter().map(|(_, groups)| vec![0; *groups]).collect();
                for chunk in cuts.windows(2) {
                    let mut first = 0;
                    for ((lines, groups), seen) in matrices.iter().zip(&mut seen) {
                        for g in groups_starting_in(chunk[0]..chunk[1], first, *lines, *groups) {
                            seen[g] += 1;
                        }
                        first += lines * groups;
                    }
                }
                assert!(seen.iter().flatten().all(|n| *n == 1), "{matrices:?} cut at {cuts:?}: {seen:?}");
            }
        }
    }
}
