//! Weight matrices in the block layouts the kernels read, read straight from a GGUF file's bytes.
//!
//! 4-bit weights (Q4_0, Q4_1) stay 4-bit: each block of 32 holds `d·q + m` with `q` in 0..16 and its
//! scale and offset as f16, the GGUF's own bytes (generating a token reads every weight once, so bytes
//! are time). 8-bit weights (Q8_0) keep their bytes too; Q5_0 and the K-quants (Q4_K, Q5_K, Q6_K) keep
//! their size in the forms of [`super::kquant`]; Q5_1 is quantized to 8-bit blocks. Activations are
//! quantized per block of 32 to 8 bits with the block's sum, so a 4-bit dot product is
//! `d_w·d_a·Σ q_w·q_a + m_w·s_a` in integers. Float weights (F32, F16, BF16) are dequantized by candle
//! to f32 rows ([`Blocks::Dense`]), multiplied by f32 activations: 8-bit blocks would put them above
//! llama.cpp's own rounding.

use std::io::{Read, Seek, SeekFrom};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use half::f16;

use super::held::{Held, Plain};
use super::kquant::{self, Dequantize, Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUPER};
use super::EngineError;

/// Values per block.
pub const BLOCK: usize = 32;

/// 32 four-bit weights: value `i` is `d·q + m`, `q` the low nibble of `qs[i]` for `i < 16`, the high
/// nibble of `qs[i-16]` after (the GGUF layout).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Q4Block {
    pub d: f16,
    pub m: f16,
    pub qs: [u8; 16],
}

/// Rows per interleaved group.
pub const ROWS: usize = 16;

/// Where byte (4-bit) or value (8-bit) `i` of row `r`'s block sits in its interleaved group's `qs`.
pub fn interleaved(r: usize, i: usize) -> usize {
    4 * ROWS * (i / 4) + 4 * r + i % 4
}

/// The same block of sixteen consecutive rows, interleaved so that one 64-byte load holds four values
/// of each row: byte `64k + 4r + i` of `qs` is byte `4k + i` of row `r`'s block (values `4k+i` in its
/// low nibble, `16+4k+i` in its high one), and the sixteen scales and offsets sit side by side. A dot
/// product then sums each row in its own vector lane, with no horizontal adds (the bytes are the
/// GGUF's, moved); an AVX2 register holds the first or last eight rows of a load.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q4x16 {
    pub d: [f16; ROWS],
    pub m: [f16; ROWS],
    pub qs: [u8; 16 * ROWS],
}

impl Q4x16 {
    /// Interleaves the blocks of sixteen rows.
    pub fn new(rows: [Q4Block; ROWS]) -> Self {
        let mut group = Self { d: [f16::ZERO; ROWS], m: [f16::ZERO; ROWS], qs: [0; 16 * ROWS] };
        for (r, block) in rows.iter().enumerate() {
            group.d[r] = block.d;
            group.m[r] = block.m;
            for (j, byte) in block.qs.iter().enumerate() {
                group.qs[interleaved(r, j)] = *byte;
            }
        }
        group
    }

    /// Row `r`'s block.
    pub fn row(&self, r: usize) -> Q4Block {
        Q4Block { d: self.d[r], m: self.m[r], qs: std::array::from_fn(|j| self.qs[interleaved(r, j)]) }
    }
}

/// Sixteen rows' 8-bit blocks interleaved the same way: byte `64k + 4r + i` of `qs` is value `4k + i`
/// of row `r`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q8x16 {
    pub d: [f16; ROWS],
    pub qs: [i8; 32 * ROWS],
}

impl Q8x16 {
    pub fn new(rows: [Q8Block; ROWS]) -> Self {
        let mut group = Self { d: [f16::ZERO; ROWS], qs: [0; 32 * ROWS] };
        for (r, block) in rows.iter().enumerate() {
            group.d[r] = block.d;
            for (j, q) in block.qs.iter().enumerate() {
                group.qs[interleaved(r, j)] = *q;
            }
        }
        group
    }

    /// Row `r`'s block.
    pub fn row(&self, r: usize) -> Q8Block {
        Q8Block { d: self.d[r], qs: std::array::from_fn(|j| self.qs[interleaved(r, j)]) }
    }
}

/// 32 eight-bit weights: value `i` is `d·qs[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct Q8Block {
    pub d: f16,
    pub qs: [i8; 32],
}

/// 32 activations quantized to 8 bits: value `i` ≈ `d·qs[i]`; `sum` is `Σqs` and `s` is `d·sum` (for
/// 4-bit offsets).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct ActBlock {
    pub d: f32,
    pub s: f32,
    pub sum: i32,
    pub qs: [i8; 32],
}

/// The blocks of a weight matrix, row after row.
#[derive(Clone, Debug, PartialEq)]
pub enum Blocks {
    /// 4-bit rows in groups of sixteen: group `g`'s block `b` at `g·row_blocks + b`. A last group short
    /// of sixteen rows is padded with zero rows.
    Q4x16(Held<Q4x16>),
    /// 8-bit rows in groups of sixteen, the same way.
    Q8x16(Held<Q8x16>),
    /// Q5_0 rows in groups of sixteen, the same way.
    Q5x16(Held<Q5x16>),
    /// Q4_K, Q5_K and Q6_K rows in groups of sixteen, one unit per 256 values (`cols / 256` a row).
    Q4Kx16(Held<Q4Kx16>),
    Q5Kx16(Held<Q5Kx16>),
    Q6Kx16(Held<Q6Kx16>),
    /// f32 values, row after row (`rows × cols`), multiplied by f32 activations.
    Dense(Held<f32>),
}

impl Blocks {
    /// The blocks' bytes, and whether they are mapped.
    fn held(&self) -> (usize, bool) {
        fn of<T: Plain>(held: &Held<T>) -> (usize, bool) {
            (std::mem::size_of_val(held.as_slice()), held.is_mapped())
        }
        match self {
            Blocks::Q4x16(b) => of(b),
            Blocks::Q8x16(b) => of(b),
            Blocks::Q5x16(b) => of(b),
            Blocks::Q4Kx16(b) => of(b),
            Blocks::Q5Kx16(b) => of(b),
            Blocks::Q6Kx16(b) => of(b),
            Blocks::Dense(v) => of(v),
        }
    }
}

/// A weight matrix of `rows` × `cols` (each row one output; `cols` a multiple of 32).
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub blocks: Blocks,
}

impl Matrix {
    /// Blocks per row.
    pub fn row_blocks(&self) -> usize {
        self.cols / BLOCK
    }

    /// Bytes held in memory (or mapped).
    pub fn bytes(&self) -> usize {
        self.blocks.held().0
    }

    /// Whether the blocks are read in place from the stored weights' file, mapped.
    pub fn is_mapped(&self) -> bool {
        self.blocks.held().1
    }

    /// Units of the blocks a row holds (a unit is 32 values, or 256 for the K forms).
    pub fn row_units(&self) -> usize {
        if self.k_form() {
            self.cols / SUPER
        } else {
            self.row_blocks()
        }
    }

    /// Whether the blocks are of a K form (multiplied by activations of 256 values a block).
    pub fn k_form(&self) -> bool {
        matches!(&self.blocks, Blocks::Q4Kx16(_) | Blocks::Q5Kx16(_) | Blocks::Q6Kx16(_))
    }

    /// Row `row` as f32 values (the embedding lookup); `out` holds `cols` values.
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        let n = self.row_blocks();
        let (g, r) = (row / ROWS, row % ROWS);
        match &self.blocks {
            Blocks::Q4x16(groups) => {
                for (group, chunk) in groups[g * n..(g + 1) * n].iter().zip(out.chunks_exact_mut(BLOCK)) {
                    let (d, m) = (group.d[r].to_f32(), group.m[r].to_f32());
                    for j in 0..16 {
                        let q = group.qs[interleaved(r, j)];
                        chunk[j] = d * f32::from(q & 0x0F) + m;
                        chunk[j + 16] = d * f32::from(q >> 4) + m;
                    }
                }
            }
            Blocks::Q8x16(groups) => {
                for (group, chunk) in groups[g * n..(g + 1) * n].iter().zip(out.chunks_exact_mut(BLOCK)) {
                    let d = group.d[r].to_f32();
                    for (j, v) in chunk.iter_mut().enumerate() {
                        *v = d * f32::from(group.qs[interleaved(r, j)]);
                    }
                }
            }
            Blocks::Q5x16(groups) => units(&groups[g * n..(g + 1) * n], r, out),
            Blocks::Q4Kx16(groups) => units(&groups[g * n / 8..(g + 1) * n / 8], r, out),
            Blocks::Q5Kx16(groups) => units(&groups[g * n / 8..(g + 1) * n / 8], r, out),
            Blocks::Q6Kx16(groups) => units(&groups[g * n / 8..(g + 1) * n / 8], r, out),
            Blocks::Dense(values) => out.copy_from_slice(&values[row * self.cols..(row + 1) * self.cols]),
        }
    }

    /// A matrix of `rows` × `cols` from its 4-bit blocks, row after row.
    pub fn from_q4(rows: usize, cols: usize, blocks: &[Q4Block]) -> Self {
        Self { rows, cols, blocks: group4(rows, blocks.len(), |i| blocks[i]) }
    }

    /// A matrix of `rows` × `cols` from its 8-bit blocks, row after row.
    pub fn from_q8(rows: usize, cols: usize, blocks: &[Q8Block]) -> Self {
        Self { rows, cols, blocks: group8(rows, blocks.len(), |i| blocks[i]) }
    }

    /// Reads tensor `name` as a matrix; `scratch` holds its bytes on the way (one buffer for every
    /// tensor, so loading touches fresh memory only for the weights it keeps).
    pub fn read<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        name: &str,
        scratch: &mut Vec<u8>,
    ) -> Result<Self, EngineError> {
        let info = content
            .tensor_infos
            .get(name)
            .ok_or_else(|| EngineError::Model(format!("the GGUF has no tensor {name}")))?;
        let dims = info.shape.dims();
        let (rows, cols) = match dims {
            [cols] => (1, *cols),
            [rows, cols] => (*rows, *cols),
            _ => return Err(EngineError::Model(format!("tensor {name}: shape {dims:?} is not a matrix"))),
        };
        if cols % BLOCK != 0 {
            return Err(EngineError::Model(format!("tensor {name}: {cols} columns is not a multiple of {BLOCK}")));
        }
        let n = rows * cols / BLOCK;
        let k_form = matches!(info.ggml_dtype, GgmlDType::Q4K | GgmlDType::Q5K | GgmlDType::Q6K);
        if k_form && !cols.is_multiple_of(SUPER) {
            return Err(EngineError::Model(format!(
                "tensor {name}: {cols} columns is not a multiple of {SUPER}, as type {:?} needs",
                info.ggml_dtype
            )));
        }
        let blocks = match info.ggml_dtype {
            GgmlDType::Q4_1 => {
                let bytes = raw(content, reader, name, n * 20, scratch)?;
                group4(rows, n, |i| q4_1(&bytes[i * 20..(i + 1) * 20]))
            }
            GgmlDType::Q4_0 => {
                let bytes = raw(content, reader, name, n * 18, scratch)?;
                group4(rows, n, |i| q4_0(&bytes[i * 18..(i + 1) * 18]))
            }
            GgmlDType::Q8_0 => {
                let bytes = raw(content, reader, name, n * 34, scratch)?;
                group8(rows, n, |i| q8_0(&bytes[i * 34..(i + 1) * 34]))
            }
            GgmlDType::Q5_0 => Blocks::Q5x16(
                kquant::q5_0(rows, cols, raw(content, reader, name, n * kquant::Q5_0_BYTES, scratch)?).into(),
            ),
            GgmlDType::Q4K => {
                let bytes = raw(content, reader, name, n / 8 * kquant::Q4_K_BYTES, scratch)?;
                Blocks::Q4Kx16(kquant::q4_k(rows, cols, bytes).into())
            }
            GgmlDType::Q5K => {
                let bytes = raw(content, reader, name, n / 8 * kquant::Q5_K_BYTES, scratch)?;
                Blocks::Q5Kx16(kquant::q5_k(rows, cols, bytes).into())
            }
            GgmlDType::Q6K => {
                let bytes = raw(content, reader, name, n / 8 * kquant::Q6_K_BYTES, scratch)?;
                Blocks::Q6Kx16(kquant::q6_k(rows, cols, bytes).into())
            }
            GgmlDType::Q5_1 => {
                let blocks = quantize_weights(&vector(content, reader, name)?);
                group8(rows, n, |i| blocks[i])
            }
            _ => Blocks::Dense(vector(content, reader, name)?.into()),
        };
        Ok(Self { rows, cols, blocks })
    }
}

/// The bytes the forward pass holds for the weights of `content`: each matrix as [`Matrix::read`]
/// keeps it (its own form, or 8-bit blocks for Q5_1, or f32 rows: four bytes a weight for float types),
/// rows padded to sixteen.
pub fn held_bytes(content: &Content) -> u64 {
    // A form's bytes for sixteen rows of `values` values each.
    let per_unit = |dtype: GgmlDType| match dtype {
        GgmlDType::Q4_1 | GgmlDType::Q4_0 => Some((BLOCK, std::mem::size_of::<Q4x16>())),
        GgmlDType::Q8_0 | GgmlDType::Q5_1 => Some((BLOCK, std::mem::size_of::<Q8x16>())),
        GgmlDType::Q5_0 => Some((BLOCK, std::mem::size_of::<Q5x16>())),
        GgmlDType::Q4K => Some((SUPER, std::mem::size_of::<Q4Kx16>())),
        GgmlDType::Q5K => Some((SUPER, std::mem::size_of::<Q5Kx16>())),
        GgmlDType::Q6K => Some((SUPER, std::mem::size_of::<Q6Kx16>())),
        _ => None,
    };
    content
        .tensor_infos
        .values()
        .map(|info| {
            let count = info.shape.elem_count() as u64;
            // Vectors (norms, biases) are read as f32 values whatever their type.
            let (&[rows, cols], Some((values, size))) = (info.shape.dims(), per_unit(info.ggml_dtype)) else {
                return count * 4;
            };
            (rows as u64).div_ceil(ROWS as u64) * (cols / values) as u64 * size as u64
        })
        .sum()
}

/// Refuses weights that need more memory than the machine has available (`MemAvailable`, Linux), naming
/// both figures, before any weight is read: a model too big is an error, never the kernel's OOM kill.
pub fn fits_in_memory(content: &Content, name: &str) -> Result<(), EngineError> {
    fits(held_bytes(content), available_memory(), name)
}

/// [`fits_in_memory`] on its figures (`available`: `None` where the machine does not say).
fn fits(needed: u64, available: Option<u64>, name: &str) -> Result<(), EngineError> {
    let Some(available) = available else { return Ok(()) };
    if needed <= available {
        return Ok(());
    }
    let gb = |bytes: u64| bytes as f64 / 1e9;
    Err(EngineError::Model(format!(
        "{name}: holding its weights needs {:.1} GB ({}), more than the {:.1} GB this machine has available",
        gb(needed),
        "float weights are held as f32 rows",
        gb(available)
    )))
}

/// `MemAvailable` of `/proc/meminfo`, in bytes (`None` where it cannot be read).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The `n` 4-bit blocks of a `rows`-row matrix (`block(i)`, row after row) in groups of sixteen rows,
/// the last padded with zero rows.
fn group4(rows: usize, n: usize, block: impl Fn(usize) -> Q4Block) -> Blocks {
    let per_row = n / rows.max(1);
    let at = |row: usize, b: usize| if row < rows { block(row * per_row + b) } else { Q4Block::default() };
    let group = |g: usize, b: usize| Q4x16::new(std::array::from_fn(|r| at(ROWS * g + r, b)));
    Blocks::Q4x16(in_groups(rows, per_row, group).into())
}

/// The same for 8-bit blocks.
fn group8(rows: usize, n: usize, block: impl Fn(usize) -> Q8Block) -> Blocks {
    let per_row = n / rows.max(1);
    let at = |row: usize, b: usize| if row < rows { block(row * per_row + b) } else { Q8Block::default() };
    let group = |g: usize, b: usize| Q8x16::new(std::array::from_fn(|r| at(ROWS * g + r, b)));
    Blocks::Q8x16(in_groups(rows, per_row, group).into())
}

/// `group(g, b)` for every row group `g` of `rows` rows and block `b` of `per_row`, group after group,
/// in one allocation of the final size (a matrix is up to tens of megabytes: no regrowing and copying).
pub(super) fn in_groups<T>(rows: usize, per_row: usize, group: impl Fn(usize, usize) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(rows.div_ceil(ROWS) * per_row);
    for g in 0..rows.div_ceil(ROWS) {
        out.extend((0..per_row).map(|b| group(g, b)));
    }
    out
}

/// Row `r` of a row group's units (each [`Dequantize`]) into `out`, unit after unit.
fn units<T: Dequantize>(units: &[T], r: usize, out: &mut [f32]) {
    let each = out.len() / units.len().max(1);
    for (unit, chunk) in units.iter().zip(out.chunks_exact_mut(each.max(1))) {
        unit.dequantize(r, chunk);
    }
}

/// Reads tensor `name` as f32 values, whatever its type (the norms).
pub fn vector<R: Read + Seek>(content: &Content, reader: &mut R, name: &str) -> Result<Vec<f32>, EngineError> {
    let model_err = |e: candle_core::Error| EngineError::Model(format!("tensor {name}: {e}"));
    let tensor = content.tensor(reader, name, &Device::Cpu).map_err(model_err)?;
    tensor.dequantize(&Device::Cpu).and_then(|t| t.flatten_all()).and_then(|t| t.to_vec1::<f32>()).map_err(model_err)
}

/// The `len` bytes of tensor `name`, read into `scratch`.
fn raw<'s, R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
    len: usize,
    scratch: &'s mut Vec<u8>,
) -> Result<&'s [u8], EngineError> {
    let info = &content.tensor_infos[name];
    let io = |e: std::io::Error| EngineError::Model(format!("tensor {name}: cannot read its {len} bytes: {e}"));
    reader.seek(SeekFrom::Start(content.tensor_data_offset + info.offset)).map_err(io)?;
    scratch.clear();
    scratch.resize(len, 0);
    reader.read_exact(scratch).map_err(io)?;
    Ok(scratch)
}

fn half_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn q4_1(bytes: &[u8]) -> Q4Block {
    let mut qs = [0; 16];
    qs.copy_from_slice(&bytes[4..20]);
    Q4Block { d: half_at(bytes, 0), m: half_at(bytes, 2), qs }
}

fn q4_0(bytes: &[u8]) -> Q4Block {
    // `d·(q − 8)` is `d·q + m` with `m = −8d` (exact in f16: a power-of-two multiple).
    let d = half_at(bytes, 0);
    let mut qs = [0; 16];
    qs.copy_from_slice(&bytes[2..18]);
    Q4Block { d, m: f16::from_f32(-8.0 * d.to_f32()), qs }
}

fn q8_0(bytes: &[u8]) -> Q8Block {
    let mut qs = [0; 32];
    for (q, b) in qs.iter_mut().zip(&bytes[2..34]) {
        *q = *b as i8;
    }
    Q8Block { d: half_at(bytes, 0), qs }
}

/// Quantizes f32 weights to 8-bit blocks (`values.len()` a multiple of 32).
pub fn quantize_weights(values: &[f32]) -> Vec<Q8Block> {
    values
        .chunks_exact(BLOCK)
        .map(|chunk| {
            let (d, qs) = quantize_block(chunk);
            let d16 = f16::from_f32(d);
            // Requantized against the f16 scale, so the stored scale is the one used.
            let qs = if d16.to_f32() > 0.0 { quantize_with(chunk, 1.0 / d16.to_f32()) } else { qs };
            Q8Block { d: d16, qs }
        })
        .collect()
}

/// [`quantize_lanes`] compiled for AVX2 (a path of [`super::kernels::Kernels`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn quantize_avx2(x: &[f32], out: &mut [ActBlock]) {
    quantize_lanes(x, out)
}

/// Activations `x` (a multiple of 32 values) quantized into `out`, one block per 32 values: the
/// reference arithmetic (a path of [`super::kernels::Kernels`]).
#[inline(always)]
pub(super) fn quantize_lanes(x: &[f32], out: &mut [ActBlock]) {
    for (chunk, block) in x.chunks_exact(BLOCK).zip(out.iter_mut()) {
        let (d, qs) = quantize_block(chunk);
        let sum: i32 = qs.iter().map(|q| i32::from(*q)).sum();
        *block = ActBlock { d, s: d * sum as f32, sum, qs };
    }
}

/// The scale `max|x|/127` and the values divided by it, rounded.
#[inline(always)]
fn quantize_block(chunk: &[f32]) -> (f32, [i8; 32]) {
    let mut lanes = [0f32; BLOCK];
    for (lane, v) in lanes.iter_mut().zip(chunk) {
        *lane = v.abs();
    }
    let amax = lanes.iter().fold(0f32, |m, v| m.max(*v));
    let d = amax / 127.0;
    (d, quantize_with(chunk, if d > 0.0 { 1.0 / d } else { 0.0 }))
}

#[inline(always)]
fn quantize_with(chunk: &[f32], inverse: f32) -> [i8; 32] {
    let mut qs = [0i8; 32];
    for (q, v) in qs.iter_mut().zip(chunk) {
        *q = (v * inverse).round_ties_even().clamp(-127.0, 127.0) as i8;
    }
    qs
}

#[cfg(test)]
#[path = "quant_tests.rs"]
mod tests;
