//! The blocks of a weight matrix as the engine holds them: built in memory from the GGUF, or read in
//! place from the stored weights' file, memory-mapped ([`super::weights`]).
//!
//! A mapped file is read where it lies: no copy into the heap, its pages are the page cache's (shared
//! by every process that loads the same model, dropped and read back by the kernel under memory
//! pressure rather than swapped), and loading reads it once (its checksum). The mapping is advised for
//! 2 MiB pages, which a kernel that keeps the file in 2 MiB page-cache folios maps as such (Linux 6.18
//! on ext4 does, for the file [`super::weights`] writes in 2 MiB pieces); elsewhere it is 4 KiB pages,
//! only slower.
//!
//! The stored file is ours: written to a temporary name and renamed into place, never written in
//! place, so the bytes under a mapping never change while it is held. (Another program truncating it
//! would fault the reader, as it would llama.cpp's mapping.)

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::Arc;

use super::kquant::{Q4Kx16, Q5Kx16, Q5x16, Q6Kx16};
use super::quant::{Q4x16, Q8x16};

/// Plain data: every byte pattern of `size_of::<Self>()` bytes is a valid value and there is no padding.
///
/// # Safety
/// Only for `repr(C)` types of f16, f32, u8 and i8 (arrays of them) with no padding bytes.
pub unsafe trait Plain: Copy + 'static {}

// SAFETY: each is `repr(C)` of f16, u8 and i8 arrays with no padding (sizes asserted in `weights`), or f32.
unsafe impl Plain for Q4x16 {}
unsafe impl Plain for Q8x16 {}
unsafe impl Plain for Q5x16 {}
unsafe impl Plain for Q4Kx16 {}
unsafe impl Plain for Q5Kx16 {}
unsafe impl Plain for Q6Kx16 {}
unsafe impl Plain for f32 {}

/// A slice of `T` the engine holds: its own vector, or `len` values at byte `at` of a mapped file.
#[derive(Clone)]
pub struct Held<T: Plain>(Inner<T>);

#[derive(Clone)]
enum Inner<T> {
    Own(Vec<T>),
    Mapped { map: Arc<memmap2::Mmap>, at: usize, len: usize, kind: PhantomData<T> },
}

impl<T: Plain> Held<T> {
    /// The `bytes` bytes at `at` of `map` as values of `T`; refused (why) unless they lie inside the
    /// mapping, make whole values and start aligned for `T`.
    pub fn mapped(map: &Arc<memmap2::Mmap>, at: usize, bytes: usize) -> Result<Self, String> {
        let size = std::mem::size_of::<T>();
        if at.checked_add(bytes).is_none_or(|end| end > map.len()) {
            return Err("past the end of the file".into());
        }
        if !bytes.is_multiple_of(size) {
            return Err(format!("{bytes} bytes are not whole blocks of {size}"));
        }
        let start = map.as_ptr().wrapping_add(at) as usize;
        if !start.is_multiple_of(std::mem::align_of::<T>()) {
            return Err(format!("the blocks at byte {at} are not aligned"));
        }
        Ok(Self(Inner::Mapped { map: Arc::clone(map), at, len: bytes / size, kind: PhantomData }))
    }

    /// Whether the values are read in place from a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Inner::Mapped { .. })
    }

    pub fn as_slice(&self) -> &[T] {
        match &self.0 {
            Inner::Own(values) => values,
            // SAFETY: `mapped` checked that the `len · size_of::<T>()` bytes at `at` lie inside the mapping
            // and start aligned for `T`; every byte pattern is a `T` (`Plain`); the mapping is read-only,
            // lives as long as the `Arc` this value holds, and its file is never written in place (see
            // the module's comment).
            Inner::Mapped { map, at, len, .. } => unsafe {
                std::slice::from_raw_parts(map.as_ptr().add(*at).cast::<T>(), *len)
            },
        }
    }
}

impl<T: Plain> From<Vec<T>> for Held<T> {
    fn from(values: Vec<T>) -> Self {
        Self(Inner::Own(values))
    }
}

impl<T: Plain> Deref for Held<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Plain + PartialEq> PartialEq for Held<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "own" };
        write!(f, "{how} {} values", self.len())
    }
}

/// The file at `file` (opened by the caller) mapped read-only, advised for huge pages where the kernel
/// takes the advice.
pub fn map(file: &std::fs::File) -> std::io::Result<Arc<memmap2::Mmap>> {
    // SAFETY: a read-only mapping of a file only this program writes, and only by renaming a whole new
    // file over it (see the module's comment): the bytes it shows do not change while it is held.
    let map = unsafe { memmap2::Mmap::map(file)? };
    #[cfg(target_os = "linux")]
    {
        // Advice: where the kernel does not take it the pages are 4 KiB, which is only slower.
        let _ = map.advise(memmap2::Advice::HugePage);
    }
    Ok(Arc::new(map))
}

/// This process's file-backed bytes mapped on 2 MiB pages (`FilePmdMapped` of `/proc/self/smaps_rollup`);
/// `None` where the kernel does not say.
pub fn file_huge_page_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("FilePmdMapped:"))?;
    let kb: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped_file(bytes: &[u8], name: &str) -> (Arc<memmap2::Mmap>, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("tunebench-held-{name}-{}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let map = map(&std::fs::File::open(&path).unwrap()).unwrap();
        (map, path)
    }

    #[test]
    fn mapped_values_are_the_files_bytes_and_bad_spans_are_refused() {
        let values: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 - 3.0).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (map, path) = mapped_file(&bytes, "values");
        let held = Held::<f32>::mapped(&map, 16, 32 * 4).unwrap();
        assert!(held.is_mapped());
        assert_eq!(&held[..], &values[4..36]);
        assert_eq!(held, Held::from(values[4..36].to_vec()));
        assert!(Held::<f32>::mapped(&map, 2, 8).unwrap_err().contains("aligned"));
        assert!(Held::<f32>::mapped(&map, 0, 6).unwrap_err().contains("whole blocks"));
        assert!(Held::<f32>::mapped(&map, 8, 64 * 4).unwrap_err().contains("past the end"));
        assert!(Held::<f32>::mapped(&map, usize::MAX, 8).unwrap_err().contains("past the end"));
        let _ = std::fs::remove_file(path);
    }
}
