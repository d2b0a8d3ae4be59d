//! The K-quant forms' tests: each form decoded as candle decodes the GGUF, the activations' quantizer
//! on every path, and the bytes the forms hold.

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::Device;

use super::super::kernels::{Kernels, Level};
use super::super::quant::{Blocks, Matrix};
use super::*;

/// Random GGUF bytes of `dtype` for `rows` × `cols`: every bit of the quantized parts random (all
/// bits set with `full`), the f16 scales finite, of both signs.
pub(in crate::engine) fn gguf_bytes(dtype: GgmlDType, rows: usize, cols: usize, seed: u32, full: bool) -> Vec<u8> {
    let (values, size, halves): (usize, usize, &[usize]) = match dtype {
        GgmlDType::Q4K => (SUPER, Q4_K_BYTES, &[0, 2]),
        GgmlDType::Q5K => (SUPER, Q5_K_BYTES, &[0, 2]),
        GgmlDType::Q6K => (SUPER, Q6_K_BYTES, &[208]),
        GgmlDType::Q5_0 => (32, Q5_0_BYTES, &[0]),
        _ => unreachable!("{dtype:?}"),
    };
    let random = super::super::kernels::tests::values(rows * cols / values * size, seed);
    let mut bytes: Vec<u8> = random.iter().map(|v| if full { 0xFF } else { ((v + 1.0) * 127.99) as u8 }).collect();
    for (b, block) in bytes.chunks_exact_mut(size).enumerate() {
        for (i, at) in halves.iter().enumerate() {
            let v = random[(b * 7 + i) % random.len()];
            let scale = if full { 0.05 } else { v / 20.0 };
            block[*at..*at + 2].copy_from_slice(&f16::from_f32(scale).to_le_bytes());
        }
    }
    bytes
}

/// The matrix of those bytes in its form.
pub(in crate::engine) fn matrix(dtype: GgmlDType, rows: usize, cols: usize, bytes: &[u8]) -> Matrix {
    let blocks = match dtype {
        GgmlDType::Q4K => Blocks::Q4Kx16(q4_k(rows, cols, bytes).into()),
        GgmlDType::Q5K => Blocks::Q5Kx16(q5_k(rows, cols, bytes).into()),
        GgmlDType::Q6K => Blocks::Q6Kx16(q6_k(rows, cols, bytes).into()),
        GgmlDType::Q5_0 => Blocks::Q5x16(q5_0(rows, cols, bytes).into()),
        _ => unreachable!("{dtype:?}"),
    };
    Matrix { rows, cols, blocks }
}

/// A random matrix of each form (the K forms when `cols` is a multiple of 256).
pub(in crate::engine) fn random_matrices(rows: usize, cols: usize, seed: u32, full: bool) -> Vec<Matrix> {
    let types = [GgmlDType::Q5_0, GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K];
    types
        .into_iter()
        .filter(|t| *t == GgmlDType::Q5_0 || cols.is_multiple_of(SUPER))
        .map(|t| matrix(t, rows, cols, &gguf_bytes(t, rows, cols, seed, full)))
        .collect()
}

/// candle's own decoder of the same bytes (`k_quants`' `to_float`), row after row.
fn candle(dtype: GgmlDType, rows: usize, cols: usize, bytes: &[u8]) -> Vec<f32> {
    let storage = QStorage::from_data(std::borrow::Cow::Borrowed(bytes), &Device::Cpu, dtype).unwrap();
    let tensor = QTensor::new(storage, (rows, cols)).unwrap();
    tensor.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

#[test]
fn every_form_reads_the_gguf_values_as_candle_decodes_them() {
    // 19 rows: a group and a padded one.
    let (rows, cols) = (19, 512);
    for dtype in [GgmlDType::Q4K, GgmlDType::Q5K, GgmlDType::Q6K, GgmlDType::Q5_0] {
        for (seed, full) in [(1, false), (2, false), (3, true)] {
            let bytes = gguf_bytes(dtype, rows, cols, seed, full);
            let want = candle(dtype, rows, cols, &bytes);
            let m = matrix(dtype, rows, cols, &bytes);
            let mut got = vec![0f32; rows * cols];
            for (r, row) in got.chunks_exact_mut(cols).enumerate() {
                m.dequantize_row(r, row);
            }
            let differ = got.iter().zip(&want).position(|(a, b)| a.to_bits() != b.to_bits());
            assert_eq!(differ, None, "{dtype:?} seed {seed}: value {differ:?} differs from candle's");
            assert!(want.iter().any(|v| *v != 0.0));
        }
    }
}

/// The K forms' activations as llama.cpp's `quantize_row_q8_K_ref` makes them: the scale from the
/// first value of largest magnitude, with its sign flipped (`iscale = −127/max`), ties to even,
/// the sums of sixteen and of 32, zero blocks all zero; every path alike.
#[test]
fn k_activations_are_llama_cpps_q8_k() {
    let mut x: Vec<f32> = super::super::kernels::tests::values(4 * SUPER, 21);
    // Block 0: max −127 first (127 later): iscale 1, so the halves show the rounding.
    x[..SUPER].fill(0.25);
    x[3] = -127.0;
    x[200] = 127.0;
    x[4..8].copy_from_slice(&[2.5, 3.5, -0.5, -2.5]);
    // Block 1: a positive max, so d < 0 and q = −127 at the max. Block 2: all zero.
    x[SUPER + 17] = 4.0;
    x[2 * SUPER..3 * SUPER].fill(0.0);
    let mut want = vec![KActBlock::default(); 4];
    quantize_k_lanes(&x, &mut want);
    let b = &want[0];
    assert_eq!(b.d, 1.0);
    assert_eq!((b.qs[0][3], b.qs[6][8], b.qs[0][0]), (-127, 127, 0), "the max, its opposite, 0.25");
    assert_eq!(&b.qs[0][4..8], &[2, 4, 0, -2], "ties to even");
    assert_eq!((want[1].d, want[1].qs[0][17]), (1.0 / (-127.0 / 4.0), -127));
    assert_eq!(want[2], KActBlock::default());
    for (b, chunk) in want.iter().zip(x.chunks_exact(SUPER)) {
        let qs = b.qs.as_flattened();
        for (s, sixteen) in b.bsums.iter().zip(qs.chunks_exact(16)) {
            assert_eq!(i32::from(*s), sixteen.iter().map(|q| i32::from(*q)).sum::<i32>());
        }
        for (s, pair) in b.sums.iter().zip(b.bsums.chunks_exact(2)) {
            assert_eq!(*s, pair[0] + pair[1]);
        }
        for (v, q) in chunk.iter().zip(qs) {
            assert!((v - b.d * f32::from(*q)).abs() <= b.d.abs() / 2.0 * 1.0001, "{v} vs {q}·{}", b.d);
        }
    }
    // Then blocks of random values of every scale, and blocks holding a NaN, an infinity, the
    // largest magnitude last, or only subnormals: every path gives the reference's blocks.
    let mut more: Vec<f32> = (0..12).flat_map(|b| super::super::kernels::tests::values(SUPER, 40 + b)).collect();
    for (b, scale) in [1e-30f32, 1e-3, 1.0, 1e3, 1e30, 3.0].into_iter().enumerate() {
        more[b * SUPER..(b + 1) * SUPER].iter_mut().for_each(|v| *v *= scale);
    }
    more[6 * SUPER + 9] = f32::NAN;
    more[7 * SUPER + 100] = f32::INFINITY;
    more[8 * SUPER + 255] = -50.0;
    more[9 * SUPER..10 * SUPER].iter_mut().for_each(|v| *v *= 1e-40);
    more[10 * SUPER + 4] = f32::NAN;
    more[10 * SUPER + 5] = f32::NEG_INFINITY;
    let mut want_more = vec![KActBlock::default(); 12];
    quantize_k_lanes(&more, &mut want_more);
    for level in [Level::Portable, Level::Avx2, Level::Avx512] {
        let Some(kernels) = Kernels::at(level) else { continue };
        let mut got = vec![KActBlock { d: 9.0, ..KActBlock::default() }; 4];
        kernels.quantize_k(&x, &mut got);
        assert_eq!(got, want, "{level:?}");
        let mut got = vec![KActBlock { d: 9.0, ..KActBlock::default() }; 12];
        kernels.quantize_k(&more, &mut got);
        for (b, (got, want)) in got.iter().zip(&want_more).enumerate() {
            assert_eq!(
                (got.d.to_bits(), got.qs, got.sums, got.bsums),
                (want.d.to_bits(), want.qs, want.sums, want.bsums),
                "{level:?}, block {b}"
            );
        }
    }
}

#[test]
fn the_forms_hold_the_files_bytes_within_three_percent() {
    let (rows, cols) = (32, 512);
    for (dtype, file) in [
        (GgmlDType::Q4K, Q4_K_BYTES * 2),
        (GgmlDType::Q5K, Q5_K_BYTES * 2),
        (GgmlDType::Q6K, Q6_K_BYTES * 2),
        (GgmlDType::Q5_0, Q5_0_BYTES * 16),
    ] {
        let m = matrix(dtype, rows, cols, &gguf_bytes(dtype, rows, cols, 5, false));
        let held = m.bytes() as f64 / (rows * file) as f64;
        assert!((1.0..1.03).contains(&held), "{dtype:?}: {held} of the file's bytes");
    }
}
