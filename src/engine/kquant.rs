//! The K-quant forms (Q4_K, Q5_K, Q6_K) and Q5_0 at their own size: each GGUF block decoded once at
//! load and its bytes laid out over sixteen rows like [`super::quant::Q4x16`], so a kernel sums each
//! row in its own lane. A sub-block is 32 values (one activation block); its 4-bit parts are packed as
//! a Q4 block's (byte `i`: value `i` in the low nibble, value `16 + i` in the high one) at
//! `interleaved(r, i)`, and the bits above them sit in a plane of their own. Per row and 256 values:
//! Q4_K 148 bytes (the file's 144: the 6-bit scales and mins unpacked to bytes), Q5_K 180 (176),
//! Q6_K 210 (210); Q5_0 22 per 32 (22). The K forms are multiplied by activations quantized as
//! llama.cpp's Q8_K ([`KActBlock`]: one scale per 256 values), Q5_0 by the 32-value blocks of
//! [`super::quant`]. The reference sums of each form are [`super::kquant_portable`]'s.

use half::f16;

use super::quant::{interleaved, ROWS};

/// Values per K-quant super-block (and per unit of a K form).
pub const SUPER: usize = 256;

/// Sub-blocks of 32 values per super-block.
pub const SUBS: usize = SUPER / 32;

/// Where the byte of sub-block (or sixteen) `j` of row `r` sits in a group's array of pairs: `j` and
/// its neighbour (`j ^ 1`) side by side at `32·(j / 2) + 2r`, so sixteen bytes from `32·(j / 2) + 16h`
/// hold the pairs of the eight rows of half `h` (an i16 pair per row lane, for a multiply-add).
pub fn paired(j: usize, r: usize) -> usize {
    32 * (j / 2) + 2 * r + j % 2
}

/// 256 activations quantized for the K forms as llama.cpp quantizes them (its Q8_K): value `i` ≈
/// `d·qs[i]`, `qs` in −127..=127 (the largest magnitude is ±127), and the sums of `qs` by 32
/// (`sums`: a Q4_K/Q5_K sub-block's, for its min) and by sixteen (`bsums`: Q6_K's, for its offset
/// of 32).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub struct KActBlock {
    pub d: f32,
    pub sums: [i16; SUBS],
    pub bsums: [i16; 2 * SUBS],
    pub qs: [[i8; 32]; SUBS],
}

/// Activations `x` (a multiple of 256 values) quantized into `out`, one block per 256 values, by
/// llama.cpp's arithmetic (`quantize_row_q8_K_ref`): the value of largest magnitude (the first of
/// them) `max`, `iscale = −127/max`, `q = min(127, round(iscale·x))` (ties to even, as its
/// `nearest_int`), `d = 1/iscale`; all zero when every value is. The reference of every path.
#[inline(always)]
pub(super) fn quantize_k_lanes(x: &[f32], out: &mut [KActBlock]) {
    for (chunk, block) in x.chunks_exact(SUPER).zip(out.iter_mut()) {
        let amax = chunk.iter().fold(0f32, |m, v| m.max(v.abs()));
        let Some(max) = chunk.iter().find(|v| v.abs() == amax).filter(|_| amax > 0.0) else {
            *block = KActBlock::default();
            continue;
        };
        let iscale = -127.0 / max;
        for (qs, values) in block.qs.iter_mut().zip(chunk.chunks_exact(32)) {
            for (q, v) in qs.iter_mut().zip(values) {
                *q = (iscale * v).round_ties_even().min(127.0) as i8;
            }
        }
        block.d = 1.0 / iscale;
        for (s, qs) in block.bsums.iter_mut().zip(block.qs.as_flattened().chunks_exact(16)) {
            *s = qs.iter().map(|q| i16::from(*q)).sum();
        }
        for (s, pair) in block.sums.iter_mut().zip(block.bsums.chunks_exact(2)) {
            *s = pair[0] + pair[1];
        }
    }
}

/// [`quantize_k_lanes`] compiled for AVX2 (a path of [`super::kernels::Kernels`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn quantize_k_avx2(x: &[f32], out: &mut [KActBlock]) {
    quantize_k_lanes(x, out)
}

/// Sixteen rows' Q4_K super-blocks: value `v` of row `r` is `d·sc·q − dmin·m`, `q` in 0..16, `sc`
/// and `m` the 6-bit scale and min of its sub-block `j = v / 32`, stored at `16j + r` and
/// [`paired`]`(j, r)`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q4Kx16 {
    pub d: [f16; ROWS],
    pub dmin: [f16; ROWS],
    pub scales: [u8; SUBS * ROWS],
    pub mins: [u8; SUBS * ROWS],
    /// Sub-block `j`'s 16 nibble bytes of row `r` at `256j + interleaved(r, i)`.
    pub qs: [u8; SUBS * 16 * ROWS],
}

/// Sixteen rows' Q5_K super-blocks: a Q4_K form whose `q` gains a fifth bit (0..32). Sub-block `j`'s
/// fifth bits of row `r` are its four bytes at `64j + 4r + i`: bit `k` of byte `i` is value `4k + i`'s,
/// bit `4 + k` value `16 + 4k + i`'s (the values of the nibble byte at `interleaved(r, 4k + i)`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q5Kx16 {
    pub low: Q4Kx16,
    pub qh: [u8; SUBS * 4 * ROWS],
}

/// Sixteen rows' Q6_K super-blocks: value `v` of row `r` is `d·sc·(q − 32)`, `q` in 0..64, `sc` the
/// i8 scale of its sixteen values (`v / 16`), stored at [`paired`]`(v / 16, r)`. The low four bits are packed
/// as in [`Q4Kx16`]; sub-block `j`'s two high bits of row `r` are its eight bytes at
/// `128j + 64m + 4r + i` (m in 0..2): bits `4s..4s+2` of byte `(m, i)` are value `4k + i`'s and bits
/// `4s+2..4s+4` value `16 + 4k + i`'s, `k = 2m + s`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q6Kx16 {
    pub d: [f16; ROWS],
    pub scales: [i8; 2 * SUBS * ROWS],
    pub qs: [u8; SUBS * 16 * ROWS],
    pub qh: [u8; SUBS * 8 * ROWS],
}

/// Sixteen rows' Q5_0 blocks of 32: value `i` of row `r` is `d·(q − 16)`, `q` in 0..32: its low four
/// bits packed as a Q4 block's at `interleaved(r, i)`, its fifth in `qh` as in [`Q5Kx16`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Q5x16 {
    pub d: [f16; ROWS],
    pub qh: [u8; 4 * ROWS],
    pub qs: [u8; 16 * ROWS],
}

/// Bytes of one GGUF block of each type.
pub const Q4_K_BYTES: usize = 144;
pub const Q5_K_BYTES: usize = 176;
pub const Q6_K_BYTES: usize = 210;
pub const Q5_0_BYTES: usize = 22;

/// One row's super-block decoded: `q` (0..64 by type), scales and mins (Q6_K: sixteen signed
/// scales, no mins).
struct Decoded {
    d: f16,
    dmin: f16,
    scales: [i8; 16],
    mins: [u8; SUBS],
    q: [u8; SUPER],
}

fn half_at(bytes: &[u8], at: usize) -> f16 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// Sub-block `j`'s 6-bit scale and min from a Q4_K/Q5_K block's twelve scale bytes: the first four
/// sub-blocks' in the low six bits of bytes `j` and `j + 4`, the last four's low four bits in the
/// nibbles of byte `j + 4` and their top two bits in the top bits of bytes `j − 4` and `j`.
fn scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// A Q4_K block (d, dmin, 12 scale bytes, 128 nibble bytes; with `qh`, Q5_K's 32 fifth-bit bytes
/// before the nibbles). Each 64 values share 32 bytes: the first 32 values in their low nibbles.
fn decode_k(bytes: &[u8], fifth: bool) -> Decoded {
    let mut out =
        Decoded { d: half_at(bytes, 0), dmin: half_at(bytes, 2), scales: [0; 16], mins: [0; SUBS], q: [0; 256] };
    for j in 0..SUBS {
        let (sc, m) = scale_min(j, &bytes[4..16]);
        out.scales[j] = sc as i8;
        out.mins[j] = m;
    }
    let (qh, qs) = if fifth { (&bytes[16..48], &bytes[48..176]) } else { (&bytes[..0], &bytes[16..144]) };
    for (v, q) in out.q.iter_mut().enumerate() {
        let (j, l) = (v / 32, v % 32);
        let byte = qs[32 * (j / 2) + l];
        *q = if j % 2 == 0 { byte & 0x0F } else { byte >> 4 };
        if fifth {
            *q |= ((qh[l] >> j) & 1) << 4;
        }
    }
    out
}

/// A Q6_K block: 128 low-nibble bytes, 64 bytes of 2-bit high parts, sixteen i8 scales, d. Each
/// 128 values share 64 nibble bytes and 32 high bytes: quarter `t` of them takes the low (t < 2) or
/// high nibble of byte `32·(t % 2) + l` and bits `2t..2t+2` of high byte `l`.
fn decode_q6_k(bytes: &[u8]) -> Decoded {
    let mut out = Decoded { d: half_at(bytes, 208), dmin: f16::ZERO, scales: [0; 16], mins: [0; SUBS], q: [0; 256] };
    for (s, b) in out.scales.iter_mut().zip(&bytes[192..208]) {
        *s = *b as i8;
    }
    for (v, q) in out.q.iter_mut().enumerate() {
        let (n, t, l) = (v / 128, (v % 128) / 32, v % 32);
        let byte = bytes[64 * n + 32 * (t % 2) + l];
        let low = if t < 2 { byte & 0x0F } else { byte >> 4 };
        *q = low | (((bytes[128 + 32 * n + l] >> (2 * t)) & 3) << 4);
    }
    out
}

/// A Q5_0 block (d, 32 fifth bits as a little-endian u32, 16 nibble bytes): `q` of its 32 values.
fn decode_q5_0(bytes: &[u8]) -> (f16, [u8; 32]) {
    let qh = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let q = std::array::from_fn(|i| {
        let byte = bytes[6 + i % 16];
        let low = if i < 16 { byte & 0x0F } else { byte >> 4 };
        low | ((((qh >> i) & 1) as u8) << 4)
    });
    (half_at(bytes, 0), q)
}

/// Packs sub-block `j` (values `q[32j..32j+32]`) of row `r`: nibbles into `qs` at
/// `256j + interleaved(r, i)`.
fn put_nibbles(qs: &mut [u8], r: usize, j: usize, q: &[u8]) {
    for i in 0..16 {
        qs[256 * j + interleaved(r, i)] = (q[32 * j + i] & 0x0F) | ((q[32 * j + 16 + i] & 0x0F) << 4);
    }
}

/// Sub-block `j`'s fifth bits of row `r` (values `q[32j..32j+32]`) into `qh` (layout of [`Q5Kx16`]).
fn put_fifth(qh: &mut [u8], r: usize, j: usize, q: &[u8]) {
    for i in 0..4 {
        let mut byte = 0;
        for k in 0..4 {
            byte |= ((q[32 * j + 4 * k + i] >> 4) & 1) << k;
            byte |= ((q[32 * j + 16 + 4 * k + i] >> 4) & 1) << (4 + k);
        }
        qh[64 * j + 4 * r + i] = byte;
    }
}

/// The value at `v` of row `r`'s nibbles (`qs` of a K form or, with `v < 32`, of [`Q5x16`]).
fn nibble(qs: &[u8], r: usize, v: usize) -> u8 {
    let (j, t) = (v / 32, v % 32);
    let byte = qs[256 * j + interleaved(r, t % 16)];
    if t < 16 {
        byte & 0x0F
    } else {
        byte >> 4
    }
}

/// The fifth bit (as 16 or 0) at `v` of row `r` in a fifth-bit plane.
fn fifth(qh: &[u8], r: usize, v: usize) -> u8 {
    let (j, t) = (v / 32, v % 32);
    let (k, i) = ((t % 16) / 4, t % 4);
    ((qh[64 * j + 4 * r + i] >> (k + 4 * (t / 16))) & 1) << 4
}

impl Q4Kx16 {
    fn zero() -> Self {
        Self { d: [f16::ZERO; ROWS], dmin: [f16::ZERO; ROWS], scales: [0; 128], mins: [0; 128], qs: [0; 2048] }
    }

    fn put(&mut self, r: usize, block: &Decoded) {
        self.d[r] = block.d;
        self.dmin[r] = block.dmin;
        for j in 0..SUBS {
            self.scales[16 * j + r] = block.scales[j] as u8;
            self.mins[paired(j, r)] = block.mins[j];
            put_nibbles(&mut self.qs, r, j, &block.q);
        }
    }

    /// `q` (0..16) of value `v` of row `r`.
    pub fn q(&self, r: usize, v: usize) -> u8 {
        nibble(&self.qs, r, v)
    }

    /// Value `v` of row `r` given its `q`: `d·sc·q − dmin·m`.
    fn value(&self, r: usize, v: usize, q: u8) -> f32 {
        let j = v / 32;
        let (sc, m) = (f32::from(self.scales[16 * j + r]), f32::from(self.mins[paired(j, r)]));
        self.d[r].to_f32() * sc * f32::from(q) - self.dmin[r].to_f32() * m
    }
}

impl Q5Kx16 {
    /// `q` (0..32) of value `v` of row `r`.
    pub fn q(&self, r: usize, v: usize) -> u8 {
        self.low.q(r, v) | fifth(&self.qh, r, v)
    }
}

/// Q4_K and Q5_K alike: the scales, mins and `d`, `dmin` of a [`Q4Kx16`], and `q`.
pub trait KForm {
    fn low(&self) -> &Q4Kx16;
    /// The fifth-bit plane (Q5_K).
    fn fifth_bits(&self) -> Option<&[u8]>;
    fn q(&self, r: usize, v: usize) -> u8;
}

impl KForm for Q4Kx16 {
    fn low(&self) -> &Q4Kx16 {
        self
    }
    fn fifth_bits(&self) -> Option<&[u8]> {
        None
    }
    fn q(&self, r: usize, v: usize) -> u8 {
        Q4Kx16::q(self, r, v)
    }
}

impl KForm for Q5Kx16 {
    fn low(&self) -> &Q4Kx16 {
        &self.low
    }
    fn fifth_bits(&self) -> Option<&[u8]> {
        Some(&self.qh)
    }
    fn q(&self, r: usize, v: usize) -> u8 {
        Q5Kx16::q(self, r, v)
    }
}

impl Q6Kx16 {
    fn zero() -> Self {
        Self { d: [f16::ZERO; ROWS], scales: [0; 256], qs: [0; 2048], qh: [0; 1024] }
    }

    fn put(&mut self, r: usize, block: &Decoded) {
        self.d[r] = block.d;
        for (s, sc) in block.scales.iter().enumerate() {
            self.scales[paired(s, r)] = *sc;
        }
        for j in 0..SUBS {
            put_nibbles(&mut self.qs, r, j, &block.q);
            for (m, i) in (0..2).flat_map(|m| (0..4).map(move |i| (m, i))) {
                let mut byte = 0;
                for s in 0..2 {
                    let k = 2 * m + s;
                    byte |= (block.q[32 * j + 4 * k + i] >> 4) << (4 * s);
                    byte |= (block.q[32 * j + 16 + 4 * k + i] >> 4) << (4 * s + 2);
                }
                self.qh[128 * j + 64 * m + 4 * r + i] = byte;
            }
        }
    }

    /// `q` (0..64) of value `v` of row `r`.
    pub fn q(&self, r: usize, v: usize) -> u8 {
        let (j, t) = (v / 32, v % 32);
        let (k, i) = ((t % 16) / 4, t % 4);
        let byte = self.qh[128 * j + 64 * (k / 2) + 4 * r + i];
        nibble(&self.qs, r, v) | (((byte >> (4 * (k % 2) + 2 * (t / 16))) & 3) << 4)
    }
}

impl Q5x16 {
    fn zero() -> Self {
        Self { d: [f16::ZERO; ROWS], qh: [0; 64], qs: [0; 256] }
    }

    /// `q` (0..32) of value `i` of row `r`.
    pub fn q(&self, r: usize, i: usize) -> u8 {
        nibble(&self.qs, r, i) | fifth(&self.qh, r, i)
    }
}

/// The groups of a `rows` × `cols` matrix of GGUF blocks `bytes` (`size` bytes each, `per_row` a row),
/// made by `fill(group, r, block bytes)` for each live row of each group, group after group.
fn build<T>(
    rows: usize,
    per_row: usize,
    size: usize,
    bytes: &[u8],
    zero: fn() -> T,
    fill: impl Fn(&mut T, usize, &[u8]),
) -> Vec<T> {
    super::quant::in_groups(rows, per_row, |g, b| {
        let mut group = zero();
        for r in 0..ROWS.min(rows - ROWS * g) {
            let at = ((ROWS * g + r) * per_row + b) * size;
            fill(&mut group, r, &bytes[at..at + size]);
        }
        group
    })
}

/// Q4_K blocks of a `rows` × `cols` matrix (`cols` a multiple of 256), row after row.
pub fn q4_k(rows: usize, cols: usize, bytes: &[u8]) -> Vec<Q4Kx16> {
    build(rows, cols / SUPER, Q4_K_BYTES, bytes, Q4Kx16::zero, |g, r, b| g.put(r, &decode_k(b, false)))
}

/// Q5_K blocks of a `rows` × `cols` matrix (`cols` a multiple of 256), row after row.
pub fn q5_k(rows: usize, cols: usize, bytes: &[u8]) -> Vec<Q5Kx16> {
    let zero = || Q5Kx16 { low: Q4Kx16::zero(), qh: [0; 512] };
    build(rows, cols / SUPER, Q5_K_BYTES, bytes, zero, |g, r, b| {
        let block = decode_k(b, true);
        g.low.put(r, &block);
        for j in 0..SUBS {
            put_fifth(&mut g.qh, r, j, &block.q);
        }
    })
}

/// Q6_K blocks of a `rows` × `cols` matrix (`cols` a multiple of 256), row after row.
pub fn q6_k(rows: usize, cols: usize, bytes: &[u8]) -> Vec<Q6Kx16> {
    build(rows, cols / SUPER, Q6_K_BYTES, bytes, Q6Kx16::zero, |g, r, b| g.put(r, &decode_q6_k(b)))
}

/// Q5_0 blocks of a `rows` × `cols` matrix (`cols` a multiple of 32), row after row.
pub fn q5_0(rows: usize, cols: usize, bytes: &[u8]) -> Vec<Q5x16> {
    build(rows, cols / 32, Q5_0_BYTES, bytes, Q5x16::zero, |g, r, b| {
        let (d, q) = decode_q5_0(b);
        g.d[r] = d;
        put_nibbles(&mut g.qs, r, 0, &q);
        put_fifth(&mut g.qh, r, 0, &q);
    })
}

/// Row `r` of a group's units as f32 values into `out` (`SUPER` or 32 values a unit).
pub trait Dequantize {
    fn dequantize(&self, r: usize, out: &mut [f32]);
}

impl Dequantize for Q4Kx16 {
    fn dequantize(&self, r: usize, out: &mut [f32]) {
        for (v, x) in out.iter_mut().enumerate() {
            *x = self.value(r, v, self.q(r, v));
        }
    }
}

impl Dequantize for Q5Kx16 {
    fn dequantize(&self, r: usize, out: &mut [f32]) {
        for (v, x) in out.iter_mut().enumerate() {
            *x = self.low.value(r, v, self.q(r, v));
        }
    }
}

impl Dequantize for Q6Kx16 {
    fn dequantize(&self, r: usize, out: &mut [f32]) {
        let d = self.d[r].to_f32();
        for (v, x) in out.iter_mut().enumerate() {
            *x = d * f32::from(self.scales[paired(v / 16, r)]) * f32::from(self.q(r, v) as i8 - 32);
        }
    }
}

impl Dequantize for Q5x16 {
    fn dequantize(&self, r: usize, out: &mut [f32]) {
        let d = self.d[r].to_f32();
        for (i, x) in out.iter_mut().enumerate() {
            *x = d * f32::from(self.q(r, i) as i8 - 16);
        }
    }
}

#[cfg(test)]
#[path = "kquant_tests.rs"]
pub(in crate::engine) mod tests;
