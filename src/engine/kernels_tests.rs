//! The kernel paths held to the portable one, bit for bit, and to the exact sums, on every block form.

use super::super::quant::{Q4Block, Q8Block};
use super::*;

/// Deterministic values in [-1, 1) (the local model's kernel tests share them).
pub(in crate::engine) fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// Random 4-bit blocks: every byte value, scales and offsets of both signs.
fn q4_matrix(rows: usize, cols: usize, seed: u32) -> Matrix {
    let blocks = (0..rows * cols / 32)
        .map(|i| {
            let v = values(18, seed.wrapping_mul(7919).wrapping_add(i as u32));
            let qs = std::array::from_fn(|j| ((v[j] + 1.0) * 127.99) as u8);
            Q4Block { d: half::f16::from_f32(v[16] / 10.0), m: half::f16::from_f32(v[17] / 5.0), qs }
        })
        .collect::<Vec<_>>();
    Matrix::from_q4(rows, cols, &blocks)
}

/// Random 8-bit blocks, −128 (which a Q8_0 file may hold) and 127 among them.
fn q8_matrix(rows: usize, cols: usize, seed: u32) -> Matrix {
    let blocks = (0..rows * cols / 32)
        .map(|i| {
            let v = values(33, seed.wrapping_mul(104_729).wrapping_add(i as u32));
            let qs = std::array::from_fn(|j| match (i + j) % 29 {
                0 => i8::MIN,
                1 => i8::MAX,
                _ => (v[j] * 128.0) as i8,
            });
            Q8Block { d: half::f16::from_f32(v[32] / 20.0), qs }
        })
        .collect::<Vec<_>>();
    Matrix::from_q8(rows, cols, &blocks)
}

/// Activation rows of `cols` values in both quantized forms (of 256 when `cols` is a multiple).
struct Acts {
    cols: usize,
    blocks: Vec<ActBlock>,
    supers: Vec<KActBlock>,
}

impl Acts {
    /// Tokens `tokens` of them.
    fn rows(&self, tokens: Range<usize>) -> Activations<'_> {
        let (per_block, per_super) = (self.cols / 32, self.cols / 256);
        Activations {
            blocks: &self.blocks[tokens.start * per_block..tokens.end * per_block],
            supers: &self.supers[tokens.start * per_super..tokens.end * per_super],
            values: &[],
        }
    }

    /// Every activation ±127 (the largest products): a block's sign alternating block by block.
    fn largest(&mut self) {
        for (i, b) in self.blocks.iter_mut().enumerate() {
            b.qs = [if i % 2 == 0 { 127 } else { -127 }; 32];
            b.sum = 32 * i32::from(b.qs[0]);
            b.s = b.d * b.sum as f32;
        }
        for (i, b) in self.supers.iter_mut().enumerate() {
            let q: i8 = if i % 2 == 0 { 127 } else { -127 };
            *b = KActBlock { d: b.d, sums: [32 * i16::from(q); 8], bsums: [16 * i16::from(q); 16], qs: [[q; 32]; 8] };
        }
    }
}

fn activations(tokens: usize, cols: usize, seed: u32) -> Acts {
    let mut x = values(tokens * cols, seed);
    // A zero block and a block of one spike among them; a zero token (every block of it 0).
    let first = 32.min(x.len());
    x[..first].fill(0.0);
    if x.len() >= 64 {
        x[32..64].fill(0.0);
        x[40] = 3.0;
    }
    if tokens > 2 {
        x[2 * cols..3 * cols].fill(0.0);
    }
    let mut blocks = vec![ActBlock::default(); tokens * cols / 32];
    Kernels::detect().quantize(&x, &mut blocks);
    let mut supers = vec![KActBlock::default(); tokens * (cols / 256)];
    if cols.is_multiple_of(256) {
        Kernels::detect().quantize_k(&x, &mut supers);
    }
    Acts { cols, blocks, supers }
}

/// `tokens × rows` sums of the row groups `groups` (others left 0).
fn product(w: &Matrix, a: Activations<'_>, tokens: usize, groups: Range<usize>, kernels: Kernels) -> Vec<f32> {
    let mut out = vec![0f32; tokens * w.rows];
    matmul_groups(w, a, tokens, groups, kernels, &mut |t, g, sums| {
        for (r, sum) in sums.iter().enumerate().filter(|(r, _)| ROWS * g + r < w.rows) {
            out[t * w.rows + ROWS * g + r] = *sum;
        }
    });
    out
}

/// [`product`] of all the groups, the `tokens` tokens handed over `batch` at a time (so the
/// kernels see passes of every size up to `batch`).
fn in_batches(w: &Matrix, a: &Acts, tokens: usize, batch: usize, kernels: Kernels) -> Vec<f32> {
    (0..tokens)
        .step_by(batch)
        .flat_map(|t| {
            let n = batch.min(tokens - t);
            product(w, a.rows(t..t + n), n, 0..groups(w), kernels)
        })
        .collect()
}

/// The dot product of the dequantized weights and token `t`'s activations (in the form `w` is
/// multiplied by), in f64, and the sum of its products' magnitudes (the scale of f32's rounding).
fn exact(w: &Matrix, r: usize, a: &Acts, t: usize) -> (f64, f64) {
    let mut row = vec![0f32; w.cols];
    w.dequantize_row(r, &mut row);
    let a = a.rows(t..t + 1);
    let x: Vec<f64> = if w.k_form() {
        a.supers.iter().flat_map(|b| b.qs.as_flattened().iter().map(|q| f64::from(b.d) * f64::from(*q))).collect()
    } else {
        a.blocks.iter().flat_map(|b| b.qs.map(|q| f64::from(b.d) * f64::from(q))).collect()
    };
    let products = row.iter().zip(x).map(|(w, x)| f64::from(*w) * x);
    products.fold((0.0, 0.0), |(sum, size), p| (sum + p, size + p.abs()))
}

fn paths() -> Vec<Kernels> {
    let paths: Vec<Kernels> =
        [Level::Portable, Level::Avx2, Level::Avx512].into_iter().filter_map(Kernels::at).collect();
    eprintln!("paths on this CPU: {:?}", paths.iter().map(|k| k.level()).collect::<Vec<_>>());
    paths
}

/// Every block form: 4-bit, 8-bit, and those of [`super::super::kquant`] (K forms when `cols` is a
/// multiple of 256), with random bytes; `full`: every quantized bit set (the largest sums).
fn matrices(rows: usize, cols: usize, seed: u32, full: bool) -> Vec<Matrix> {
    let mut all = if full { vec![] } else { vec![q4_matrix(rows, cols, seed), q8_matrix(rows, cols, seed)] };
    all.extend(super::super::kquant::tests::random_matrices(rows, cols, seed, full));
    all
}

#[test]
fn every_path_gives_the_portable_bits_and_the_exact_sum() {
    // 35 rows: three groups, the last padded; 32 columns: one block; 608: 19; 256 and 1536: one and
    // six K super-blocks.
    let cases = [(32, 1, false), (576, 2, false), (608, 3, false), (1536, 4, false), (256, 5, false), (512, 6, true)];
    let mut forms = std::collections::HashSet::new();
    for (cols, seed, full) in cases {
        let rows = 35;
        for w in matrices(rows, cols, seed, full) {
            forms.insert(std::mem::discriminant(&w.blocks));
            let tokens = 9;
            let mut a = activations(tokens, cols, seed + 10);
            if full {
                a.largest();
            }
            let want = product(&w, a.rows(0..tokens), tokens, 0..groups(&w), Kernels::portable());
            for t in 0..tokens {
                for r in 0..rows {
                    let (exact, size) = exact(&w, r, &a, t);
                    let got = f64::from(want[t * rows + r]);
                    assert!(
                        (got - exact).abs() < 1e-4 * (1.0 + exact.abs()) + 2e-5 * size,
                        "{cols} cols, {:?}, token {t}, row {r}: {got} vs {exact}",
                        std::mem::discriminant(&w.blocks)
                    );
                }
            }
            for kernels in paths() {
                // Passes of 1 to 4 tokens (9 tokens in batches of 1, 2, 3, 4 and all at once).
                for batch in [1, 2, 3, 4, tokens] {
                    let got = in_batches(&w, &a, tokens, batch, kernels);
                    let differ = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
                    assert_eq!(differ, None, "{kernels:?}, {cols} cols, batches of {batch}: not the portable bits");
                }
            }
        }
    }
    assert_eq!(forms.len(), 6, "every block form");
}

#[test]
fn a_token_gets_the_same_bits_alone_as_in_a_batch_and_in_any_group_range() {
    let (rows, tokens) = (48, 7);
    for cols in [608, 768] {
        for w in matrices(rows, cols, 5, false) {
            let a = activations(tokens, cols, 9);
            for kernels in paths() {
                let batch = product(&w, a.rows(0..tokens), tokens, 0..3, kernels);
                for size in 2..=4 {
                    let other = in_batches(&w, &a, tokens, size, kernels);
                    assert_eq!(other, batch, "{kernels:?}: batches of {size} as one of {tokens}");
                }
                for t in 0..tokens {
                    let token = a.rows(t..t + 1);
                    let one = product(&w, token, 1, 0..3, kernels);
                    assert_eq!(one, batch[t * rows..(t + 1) * rows], "{kernels:?}, token {t}: alone as in a batch");
                    let part = product(&w, token, 1, 1..2, kernels);
                    assert_eq!(part[16..32], one[16..32], "{kernels:?}, token {t}: group 1 alone");
                }
            }
        }
    }
}

/// f32 rows (float weights) times f32 activations: the f64 sum on every path, the
/// last group's missing rows 0, any group range alike.
#[test]
fn f32_rows_give_the_exact_sum_on_every_path() {
    let (rows, cols, tokens) = (35, 96, 3);
    let w = Matrix { rows, cols, blocks: Blocks::Dense(values(rows * cols, 11).into()) };
    let x = values(tokens * cols, 12);
    let Blocks::Dense(weights) = &w.blocks else { unreachable!() };
    for kernels in paths() {
        let mut out = vec![f32::NAN; tokens * rows];
        matmul_groups(
            &w,
            Activations { values: &x, ..Activations::default() },
            tokens,
            0..groups(&w),
            kernels,
            &mut |t, g, sums| {
                for (r, sum) in sums.iter().enumerate() {
                    if ROWS * g + r < rows {
                        out[t * rows + ROWS * g + r] = *sum;
                    } else {
                        assert_eq!(*sum, 0.0, "row {} past the last", ROWS * g + r);
                    }
                }
            },
        );
        for t in 0..tokens {
            for r in 0..rows {
                let exact: f64 = (0..cols).map(|c| f64::from(weights[r * cols + c]) * f64::from(x[t * cols + c])).sum();
                let got = f64::from(out[t * rows + r]);
                assert!((got - exact).abs() < 1e-5, "{kernels:?}, token {t}, row {r}: {got} vs {exact}");
            }
        }
    }
}

#[test]
fn f32_dot_matches_a_plain_loop() {
    for n in [64, 67, 3] {
        let (a, b) = (values(n, 1), values(n, 2));
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        for kernels in paths() {
            assert!((kernels.dot(&a, &b) - want).abs() < 1e-4, "{kernels:?}");
        }
    }
}
