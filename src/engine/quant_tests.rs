//! The quantized weight forms' tests: held bytes, block layouts and the activation quantizer.

use super::super::kernels::{Kernels, Level};
use super::*;

#[test]
fn the_weights_held_are_counted_as_held_and_too_many_are_refused_before_loading() {
    let fixture = |name: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/families").join(name);
        let mut file = std::fs::File::open(path).unwrap();
        Content::read(&mut file).unwrap()
    };
    let f32_file = fixture("llama3-F32.gguf");
    let weights: u64 = f32_file.tensor_infos.values().map(|t| t.shape.elem_count() as u64).sum();
    assert_eq!(held_bytes(&f32_file), 4 * weights, "f32 rows: four bytes a weight");
    let q4 = fixture("llama3-Q4_0.gguf");
    assert!(held_bytes(&q4) < held_bytes(&fixture("llama3-Q8_0.gguf")));
    // K-quant mixes at their own size: within 5% of the file's tensor bytes (Q4_K's unpacked
    // scales, rows padded to sixteen).
    for family in ["smollm2", "llama3", "qwen2", "qwen3", "gemma3"] {
        let mix = fixture(&format!("{family}-Q4_K_M.gguf"));
        let file: u64 = mix
            .tensor_infos
            .values()
            .map(|t| (t.shape.elem_count() / t.ggml_dtype.block_size() * t.ggml_dtype.type_size()) as u64)
            .sum();
        let ratio = held_bytes(&mix) as f64 / file as f64;
        eprintln!("{family}-Q4_K_M: {} bytes held for {file} in the file ({ratio:.4})", held_bytes(&mix));
        assert!((1.0..1.05).contains(&ratio), "{family}: {ratio}");
    }
    assert!(fits(10, Some(10), "m").is_ok() && fits(10, None, "m").is_ok());
    let refused = fits(32_100_000_000, Some(22_500_000_000), "this qwen3 model").unwrap_err().to_string();
    assert!(refused.contains("needs 32.1 GB") && refused.contains("22.5 GB") && refused.contains("qwen3"), "{refused}");
}

#[test]
fn q4_blocks_read_the_gguf_layout() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&f16::from_f32(0.5).to_le_bytes());
    bytes.extend_from_slice(&f16::from_f32(-1.0).to_le_bytes());
    bytes.extend((0..16u8).map(|i| i | ((15 - i) << 4)));
    let matrix = Matrix::from_q4(1, 32, &[q4_1(&bytes)]);
    let mut row = [0f32; 32];
    matrix.dequantize_row(0, &mut row);
    assert_eq!(row[0], -1.0);
    assert_eq!(row[15], 0.5 * 15.0 - 1.0);
    assert_eq!(row[16], 0.5 * 15.0 - 1.0);
    assert_eq!(row[31], -1.0);
}

#[test]
fn interleaved_rows_read_back_as_the_blocks_they_came_from() {
    let blocks: Vec<Q4Block> = (0..32u8)
        .map(|i| Q4Block {
            d: f16::from_f32(f32::from(i) + 0.5),
            m: f16::from_f32(-f32::from(i)),
            qs: std::array::from_fn(|j| i.wrapping_mul(31).wrapping_add(j as u8 * 7)),
        })
        .collect();
    // 16 rows of 2 blocks.
    let grouped = Matrix::from_q4(16, 64, &blocks);
    let Blocks::Q4x16(groups) = &grouped.blocks else { panic!("16 rows interleave") };
    assert_eq!(groups.len(), 2);
    for r in 0..16 {
        assert_eq!(groups[1].row(r), blocks[r * 2 + 1]);
        // Each row reads back as its own two blocks, value by value.
        let mut values = [0f32; 64];
        grouped.dequantize_row(r, &mut values);
        for (b, block) in blocks[r * 2..r * 2 + 2].iter().enumerate() {
            let (d, m) = (block.d.to_f32(), block.m.to_f32());
            for (j, q) in block.qs.iter().enumerate() {
                assert_eq!(values[32 * b + j], d * f32::from(q & 0x0F) + m);
                assert_eq!(values[32 * b + j + 16], d * f32::from(q >> 4) + m);
            }
        }
    }
    // 4 rows of 8 blocks: one group, padded with twelve zero rows.
    let Blocks::Q4x16(padded) = &Matrix::from_q4(4, 256, &blocks).blocks else { unreachable!() };
    assert_eq!(padded.len(), 8);
    assert_eq!((padded[7].row(3), padded[7].row(4)), (blocks[31], Q4Block::default()));
    let eight: Vec<Q8Block> = (0..32i8)
        .map(|i| Q8Block {
            d: f16::from_f32(f32::from(i)),
            qs: std::array::from_fn(|j| i.wrapping_mul(9).wrapping_sub(j as i8)),
        })
        .collect();
    let Blocks::Q8x16(groups) = Matrix::from_q8(16, 64, &eight).blocks else { panic!("16 rows interleave") };
    for r in 0..16 {
        assert_eq!(groups[1].row(r), eight[r * 2 + 1]);
    }
}

#[test]
fn q4_0_is_an_offset_of_minus_eight_scales() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&f16::from_f32(2.0).to_le_bytes());
    bytes.extend([0x80u8; 16]);
    let block = q4_0(&bytes);
    assert_eq!((block.d.to_f32(), block.m.to_f32()), (2.0, -16.0));
    let matrix = Matrix::from_q4(1, 32, &[block]);
    let mut row = [1f32; 32];
    matrix.dequantize_row(0, &mut row);
    assert_eq!(&row[..16], &[-16.0; 16]);
    assert_eq!(&row[16..], &[0.0; 16]);
}

#[test]
fn every_path_quantizes_activations_alike_ties_to_even() {
    let mut x: Vec<f32> = (0..32 * 40).map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 97.0).collect();
    // A block whose scale is 1: halves round to even.
    x[..32].copy_from_slice(&std::array::from_fn::<f32, 32, _>(|i| if i == 0 { 127.0 } else { i as f32 - 16.5 }));
    x[32..64].fill(0.0);
    let mut want = vec![ActBlock::default(); 40];
    quantize_lanes(&x, &mut want);
    assert_eq!((want[0].qs[1], want[0].qs[2], want[0].qs[31]), (-16, -14, 14), "ties to even");
    assert_eq!(want[1], ActBlock::default());
    for level in [Level::Portable, Level::Avx2, Level::Avx512] {
        let Some(kernels) = Kernels::at(level) else { continue };
        let mut got = vec![ActBlock::default(); 40];
        kernels.quantize(&x, &mut got);
        assert_eq!(got, want, "{level:?}");
    }
}

#[test]
fn activations_round_trip_within_half_a_step() {
    let x: Vec<f32> = (0..64).map(|i| ((i * 37 % 19) as f32 - 9.0) * 0.37).collect();
    let mut blocks = vec![ActBlock::default(); 2];
    Kernels::detect().quantize(&x, &mut blocks);
    for (chunk, b) in x.chunks(32).zip(&blocks) {
        for (v, q) in chunk.iter().zip(b.qs) {
            assert!((v - b.d * f32::from(q)).abs() <= b.d / 2.0 + 1e-6);
        }
        let sum: i32 = b.qs.iter().map(|q| i32::from(*q)).sum();
        assert_eq!(b.sum, sum);
        assert!((b.s - b.d * sum as f32).abs() < 1e-4);
    }
}

#[test]
fn a_zero_block_quantizes_to_zeros() {
    let mut blocks = vec![ActBlock { d: 9.0, s: 9.0, sum: 9, qs: [9; 32] }];
    Kernels::detect().quantize(&[0.0; 32], &mut blocks);
    assert_eq!(blocks[0], ActBlock::default());
}
