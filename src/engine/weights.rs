//! The interleaved weights on disk: once a GGUF's block matrices have been regrouped into the kernels'
//! layout ([`super::quant`]; f32 rows are not stored, read from the GGUF every time), they are written
//! to `<cache dir>/weights/` (atomically), so a later start maps the file and reads its blocks in
//! place ([`super::held`]; each matrix's blocks start on a 64-byte line) instead of rebuilding
//! them. A cache file names the GGUF it came from (its size, modified time and a hash of its first and
//! last mebibyte) and ends with a checksum of everything before it: a file of another GGUF, of another
//! layout version, or damaged (cut short, bytes changed) is never trusted; the weights are rebuilt
//! from the GGUF and the file written again. Writing one removes what is no longer needed: this GGUF's
//! older files, half-written files of processes that ended, and the models used least recently past
//! [`kept::KEEP_BYTES`] (a load marks its file used), so switching between a few models maps their files.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::held::{self, Held, Plain};
use super::kquant::{Q4Kx16, Q5Kx16, Q5x16, Q6Kx16, SUPER};
use super::quant::{Blocks, Matrix, Q4x16, Q8x16, BLOCK, ROWS};
use crate::files::Limit;

mod kept;

/// The first bytes of a cache file; the number is the layout's version (a change of the block layout
/// bumps it, so older files are rebuilt).
const MAGIC: &[u8; 16] = b"tunebench-wts-05";

/// Where a matrix's blocks start in the file: a multiple of this (a cache line; the mapping is page-aligned).
const ALIGN: usize = 64;

// The blocks are written as their bytes: plain data with no padding.
const _: () = assert!(std::mem::size_of::<Q4x16>() == 4 * ROWS + 16 * ROWS);
const _: () = assert!(std::mem::size_of::<Q8x16>() == 2 * ROWS + 32 * ROWS);
const _: () = assert!(std::mem::size_of::<Q5x16>() == 22 * ROWS);
const _: () = assert!(std::mem::size_of::<Q4Kx16>() == 148 * ROWS);
const _: () = assert!(std::mem::size_of::<Q5Kx16>() == 180 * ROWS);
const _: () = assert!(std::mem::size_of::<Q6Kx16>() == 210 * ROWS);

/// What identifies a GGUF file: its size, modified time, and a hash of its first and last mebibyte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub len: u64,
    pub modified_ns: u64,
    pub ends_hash: u64,
}

impl Identity {
    /// The identity of the file at `path`.
    pub fn of(path: &Path) -> Result<Self, String> {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let (mut file, meta) = crate::files::open(path, crate::files::GGUF).map_err(|e| e.to_string())?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let len = meta.len();
        let span = (1u64 << 20).min(len);
        let mut ends = vec![0u8; 2 * span as usize];
        file.read_exact(&mut ends[..span as usize]).map_err(io)?;
        file.seek(SeekFrom::Start(len - span)).map_err(io)?;
        file.read_exact(&mut ends[span as usize..]).map_err(io)?;
        Ok(Self { len, modified_ns, ends_hash: checksum(&ends) })
    }

    fn bytes(&self) -> [u8; 24] {
        let mut out = [0u8; 24];
        out[..8].copy_from_slice(&self.len.to_le_bytes());
        out[8..16].copy_from_slice(&self.modified_ns.to_le_bytes());
        out[16..].copy_from_slice(&self.ends_hash.to_le_bytes());
        out
    }
}

/// The cache file of the GGUF at `gguf` in `dir`: its name and identity hash, so another GGUF (or
/// this one changed) has another file.
pub fn file_for(dir: &Path, gguf: &Path, identity: &Identity) -> PathBuf {
    let stem = gguf.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    let stem: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    dir.join(format!("{stem}.{:016x}.weights", checksum(&identity.bytes())))
}

/// A fast 64-bit hash of `bytes` (four lanes of multiply and shift; it finds damage, it is no
/// defence against tampering, which a cache directory of the user's own needs none of).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.finish()
}

/// [`checksum`] of bytes given piece by piece (a file as it is written).
struct Checksum {
    lanes: [u64; 4],
    /// The bytes of a 32-byte word not yet whole.
    pending: [u8; 32],
    filled: usize,
    len: u64,
}

const K: u64 = 0x9E37_79B9_7F4A_7C15;

impl Default for Checksum {
    fn default() -> Self {
        Self { lanes: [K, K ^ 1, K ^ 2, K ^ 3], pending: [0; 32], filled: 0, len: 0 }
    }
}

fn mix(lane: &mut u64, word: u64) {
    *lane = (*lane ^ word).wrapping_mul(K);
    *lane ^= *lane >> 29;
}

impl Checksum {
    fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.filled > 0 {
            let take = (32 - self.filled).min(bytes.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 32 {
                return;
            }
            let word = self.pending;
            self.word(&word);
            self.filled = 0;
        }
        let words = bytes.chunks_exact(32);
        let tail = words.remainder();
        for chunk in words {
            self.word(chunk);
        }
        self.pending[..tail.len()].copy_from_slice(tail);
        self.filled = tail.len();
    }

    fn word(&mut self, chunk: &[u8]) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&chunk[8 * i..8 * i + 8]);
            mix(lane, u64::from_le_bytes(word));
        }
    }

    fn finish(mut self) -> u64 {
        for (i, byte) in self.pending[..self.filled].iter().enumerate() {
            mix(&mut self.lanes[i % 4], u64::from(*byte) | ((i as u64) << 8));
        }
        let mut out = self.len;
        for lane in self.lanes {
            mix(&mut out, lane);
        }
        out
    }
}

/// A writer that hands its file whole 2 MiB pieces, each at a multiple of 2 MiB (the last one shorter):
/// the page cache then holds the file in 2 MiB folios where the filesystem makes them, which a later
/// start maps as huge pages ([`super::held`]); written 1 MiB at a time, a third of it was.
struct InPieces<W> {
    inner: W,
    piece: Vec<u8>,
}

const PIECE: usize = 2 << 20;

impl<W: Write> Write for InPieces<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let take = (PIECE - self.piece.len()).min(bytes.len());
        self.piece.extend_from_slice(&bytes[..take]);
        if self.piece.len() == PIECE {
            self.inner.write_all(&self.piece)?;
            self.piece.clear();
        }
        Ok(take)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.write_all(&self.piece)?;
        self.piece.clear();
        self.inner.flush()
    }
}

/// A writer that sums what goes through it, and counts it.
struct Summed<W> {
    inner: W,
    sum: Checksum,
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(bytes)?;
        self.sum.update(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The bytes of a slice of blocks.
fn block_bytes<T: Plain>(blocks: &[T]) -> &[u8] {
    // SAFETY: `Plain` types have no padding, so every byte is initialised; the length is the slice's
    // size in bytes.
    unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast::<u8>(), std::mem::size_of_val(blocks)) }
}

/// Writes `matrices` (by tensor name) for the GGUF of `identity` to `path`, atomically: a reader sees
/// the old file or the whole new one. Streamed: no copy of the weights is made to write them.
pub fn save(path: &Path, identity: &Identity, matrices: &[(&str, &Matrix)]) -> Result<(), String> {
    write_atomic(path, |file| {
        let pieces = InPieces { inner: file, piece: Vec::with_capacity(PIECE) };
        let mut out = Summed { inner: pieces, sum: Checksum::default() };
        out.write_all(MAGIC)?;
        out.write_all(&identity.bytes())?;
        out.write_all(&(matrices.len() as u64).to_le_bytes())?;
        for (name, m) in matrices {
            out.write_all(&(name.len() as u64).to_le_bytes())?;
            out.write_all(name.as_bytes())?;
            let (kind, bytes) = match &m.blocks {
                Blocks::Q4x16(b) => (4u64, block_bytes(b)),
                Blocks::Q8x16(b) => (8u64, block_bytes(b)),
                Blocks::Q5x16(b) => (5u64, block_bytes(b)),
                Blocks::Q4Kx16(b) => (14u64, block_bytes(b)),
                Blocks::Q5Kx16(b) => (15u64, block_bytes(b)),
                Blocks::Q6Kx16(b) => (16u64, block_bytes(b)),
                Blocks::Dense(v) => (32u64, block_bytes(v)),
            };
            for n in [kind, m.rows as u64, m.cols as u64, bytes.len() as u64] {
                out.write_all(&n.to_le_bytes())?;
            }
            let written = out.sum.len as usize;
            out.write_all(&[0u8; ALIGN][..written.next_multiple_of(ALIGN) - written])?;
            out.write_all(bytes)?;
        }
        let Summed { mut inner, sum } = out;
        inner.write_all(&sum.finish().to_le_bytes())?;
        inner.flush()
    })?;
    kept::prune(path, kept::KEEP_BYTES);
    Ok(())
}

static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// Writes a file at `path` with `write`, atomically: into a temporary file beside it, renamed over it.
fn write_atomic(path: &Path, write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(fail)?;
    let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT_TEMP.fetch_add(1, Ordering::Relaxed)));
    let written = std::fs::File::create(&temp)
        .and_then(|mut file| write(&mut file).and_then(|()| file.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(fail(e));
    }
    Ok(())
}

/// Reads a little-endian number at `*at`, moving past it.
fn number(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let slice = bytes.get(*at..*at + 8).ok_or("cut short")?;
    *at += 8;
    let mut word = [0u8; 8];
    word.copy_from_slice(slice);
    Ok(u64::from_le_bytes(word))
}

/// The most bytes a cache file of the GGUF of `identity` may have: its matrices re-laid out take at
/// most about 3.3 times their bytes in the GGUF (2.6-bit blocks become 8-bit ones), rows padded to
/// sixteen; anything larger is not one of ours.
pub fn limit(identity: &Identity) -> Limit {
    Limit { kind: "a stored-weights file", bytes: identity.len.saturating_mul(4).saturating_add(16 << 20) }
}

/// The matrices of the cache file at `path`, by tensor name, read in place (the file mapped), if it is
/// whole and made from the GGUF of `identity`; else why not (missing, another GGUF, another version,
/// damaged, not a regular file, past its [`limit`]).
pub fn load(path: &Path, identity: &Identity) -> Result<HashMap<String, Matrix>, String> {
    let (file, _) = crate::files::open_within(path, limit(identity)).map_err(|e| e.to_string())?;
    let map = held::map(&file).map_err(|e| format!("{}: cannot map: {e}", path.display()))?;
    let matrices = parse(&map, identity).map_err(|why| format!("{}: {why}", path.display()))?;
    // Used now: the last file [`kept::prune`] removes (a file whose time cannot be set is only older).
    let _ = file.set_modified(std::time::SystemTime::now());
    Ok(matrices)
}

fn parse(map: &Arc<memmap2::Mmap>, identity: &Identity) -> Result<HashMap<String, Matrix>, String> {
    let bytes: &[u8] = map;
    if bytes.len() < MAGIC.len() + 24 + 16 || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a weights cache of this version".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let mut at = 0;
    // Reading every byte once, which also brings the file's pages in.
    if number(sum, &mut at)? != checksum(body) {
        return Err("damaged (checksum differs)".into());
    }
    let mut at = MAGIC.len();
    if body.get(at..at + 24) != Some(&identity.bytes()[..]) {
        return Err("made from another model file".into());
    }
    at += 24;
    let count = number(body, &mut at)?;
    let mut out = HashMap::new();
    for _ in 0..count {
        let len = number(body, &mut at)? as usize;
        let name = body.get(at..at.saturating_add(len)).ok_or("cut short")?;
        let name = String::from_utf8_lossy(name).into_owned();
        at = at.saturating_add(len);
        let (kind, rows, cols, len) =
            (number(body, &mut at)?, number(body, &mut at)?, number(body, &mut at)?, number(body, &mut at)? as usize);
        at = at.next_multiple_of(ALIGN);
        let data = at;
        at = at.saturating_add(len);
        if at > body.len() {
            return Err("cut short".into());
        }
        let (rows, cols) = (rows as usize, cols as usize);
        // Units of `values` values in `rows` rows of `cols`, of `size` bytes each, make `len` bytes.
        let fits = |values: usize, size: usize| {
            cols.is_multiple_of(values) && Some(len) == rows.div_ceil(ROWS).checked_mul(cols / values * size)
        };
        let blocks = match kind {
            4 if fits(BLOCK, size_of::<Q4x16>()) => Blocks::Q4x16(Held::mapped(map, data, len)?),
            8 if fits(BLOCK, size_of::<Q8x16>()) => Blocks::Q8x16(Held::mapped(map, data, len)?),
            5 if fits(BLOCK, size_of::<Q5x16>()) => Blocks::Q5x16(Held::mapped(map, data, len)?),
            14 if fits(SUPER, size_of::<Q4Kx16>()) => Blocks::Q4Kx16(Held::mapped(map, data, len)?),
            15 if fits(SUPER, size_of::<Q5Kx16>()) => Blocks::Q5Kx16(Held::mapped(map, data, len)?),
            16 if fits(SUPER, size_of::<Q6Kx16>()) => Blocks::Q6Kx16(Held::mapped(map, data, len)?),
            32 if Some(len) == rows.checked_mul(cols).and_then(|n| n.checked_mul(4)) => {
                Blocks::Dense(Held::mapped(map, data, len)?)
            }
            _ => return Err(format!("tensor {name}: {len} bytes do not make {rows}×{cols} of kind {kind}")),
        };
        out.insert(name, Matrix { rows, cols, blocks });
    }
    if at != body.len() {
        return Err("trailing bytes".into());
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use half::f16;

    use super::super::quant::{Q4Block, Q8Block};
    use super::*;

    pub(super) fn matrices() -> Vec<(String, Matrix)> {
        let q4: Vec<Q4Block> = (0..40u8)
            .map(|i| Q4Block {
                d: f16::from_f32(f32::from(i) * 0.25),
                m: f16::from_f32(-f32::from(i)),
                qs: std::array::from_fn(|j| i.wrapping_mul(13).wrapping_add(j as u8)),
            })
            .collect();
        let q8: Vec<Q8Block> = (0..20u8)
            .map(|i| Q8Block { d: f16::from_f32(f32::from(i) + 0.5), qs: std::array::from_fn(|j| (i as i8) - j as i8) })
            .collect();
        let dense: Vec<f32> = (0..3 * 32).map(|i| i as f32 / 7.0 - 5.0).collect();
        let mut all = vec![
            ("a".into(), Matrix::from_q4(20, 64, &q4)),
            ("b".into(), Matrix::from_q8(10, 64, &q8)),
            ("c".into(), Matrix { rows: 3, cols: 32, blocks: Blocks::Dense(dense.into()) }),
        ];
        // Q5_0, Q4_K, Q5_K, Q6_K: 20 rows of 512.
        let forms = super::super::kquant::tests::random_matrices(20, 512, 3, false);
        all.extend(forms.into_iter().enumerate().map(|(i, m)| (format!("k{i}"), m)));
        all
    }

    pub(super) fn identity() -> Identity {
        Identity { len: 98, modified_ns: 7, ends_hash: 42 }
    }

    fn saved(dir: &Path) -> PathBuf {
        let path = dir.join("m.weights");
        let all = matrices();
        let refs: Vec<(&str, &Matrix)> = all.iter().map(|(n, m)| (n.as_str(), m)).collect();
        save(&path, &identity(), &refs).unwrap();
        path
    }

    pub(super) fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tunebench-weights-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn saved_weights_read_back_the_same() {
        let dir = temp_dir("same");
        let loaded = load(&saved(&dir), &identity()).unwrap();
        for (name, m) in matrices() {
            assert_eq!(loaded[&name], m, "{name}");
            assert!(loaded[&name].is_mapped() && !m.is_mapped(), "{name} is read in place");
        }
        assert_eq!(loaded.len(), 7);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn another_model_a_damaged_or_cut_file_is_never_trusted() {
        let dir = temp_dir("damaged");
        let path = saved(&dir);
        let other = Identity { modified_ns: 8, ..identity() };
        assert!(load(&path, &other).unwrap_err().contains("another model file"));
        let good = std::fs::read(&path).unwrap();
        for at in [0, 20, 60, good.len() / 2, good.len() - 9, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            assert!(load(&path, &identity()).is_err(), "byte {at} changed");
        }
        for len in [0, 10, 100, good.len() - 1] {
            std::fs::write(&path, &good[..len]).unwrap();
            assert!(load(&path, &identity()).is_err(), "cut at {len}");
        }
        assert!(load(&dir.join("missing.weights"), &identity()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_checksum_of_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let whole = checksum(&bytes);
        for [a, b] in [[0, 0], [1, 5], [31, 33], [32, 64], [7, 999], [500, 1000], [1000, 1000]] {
            let mut sum = Checksum::default();
            for piece in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                sum.update(piece);
            }
            assert_eq!(sum.finish(), whole, "cut at {a} and {b}");
        }
        let mut changed = bytes.clone();
        changed[999] ^= 1;
        assert_ne!(checksum(&changed), whole);
        assert_ne!(checksum(&bytes[..999]), whole);
    }

    #[test]
    fn the_identity_follows_the_file() {
        let dir = temp_dir("identity");
        let path = dir.join("m.gguf");
        std::fs::write(&path, vec![1u8; 3000]).unwrap();
        let first = Identity::of(&path).unwrap();
        assert_eq!(first.len, 3000);
        let mut changed = vec![1u8; 3000];
        changed[2999] = 2;
        std::fs::write(&path, &changed).unwrap();
        assert_ne!(Identity::of(&path).unwrap().ends_hash, first.ends_hash);
        assert_ne!(file_for(&dir, &path, &first), file_for(&dir, &path, &Identity::of(&path).unwrap()));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_device_a_pipe_or_an_oversized_file_is_refused_unread() {
        let dir = temp_dir("hostile");
        let zero = dir.join("zero.weights");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(load(&zero, &identity()).unwrap_err().contains("a device, not a regular file"));
        let pipe = dir.join("pipe.weights");
        let name = std::ffi::CString::new(pipe.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(load(&pipe, &identity()).unwrap_err().contains("a named pipe (FIFO)"));
        let huge = dir.join("huge.weights");
        std::fs::File::create(&huge).unwrap().set_len(limit(&identity()).bytes + 1).unwrap();
        let error = load(&huge, &identity()).unwrap_err();
        assert!(error.contains("larger than") && error.contains("a stored-weights file"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
