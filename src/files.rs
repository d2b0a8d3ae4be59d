//! Every file tunebench reads goes through here: opened without blocking (a FIFO cannot hang the
//! open), refused unless it is a regular file, and read to at most a cap that fits its kind, so a
//! name that points at `/dev/zero`, a pipe or a huge file is an error naming the file and the cap.
//! Also the one check that a file a prompt names stays inside the prompt's folder ([`inside`]) and
//! the one comparison of an output with the inputs ([`refuse_overwriting`]), and the one listing of a
//! store's records ([`records_newest_first`]).

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The `.json` record files in `dir`, newest first (by name: a store names each by its start time);
/// none when the folder is not there yet. The error names the folder.
pub fn records_newest_first(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    files.reverse();
    Ok(files)
}

/// A kind of file and the most bytes one may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The kind, in words ("a prompt file").
    pub kind: &'static str,
    pub bytes: u64,
}

const MIB: u64 = 1 << 20;

/// A prompt file (a 100,000-case prompt is some tens of MiB).
pub const PROMPT_FILE: Limit = Limit { kind: "a prompt file", bytes: 64 * MIB };
/// A prompt's `schema_file`, or a schema given on the command line.
pub const SCHEMA_FILE: Limit = Limit { kind: "a schema file", bytes: 32 * MIB };
/// A case's `expected_file`.
pub const EXPECTED_FILE: Limit = Limit { kind: "an expected file", bytes: 128 * MIB };
/// A dataset of cases (`cases_file`, `--cases`): JSONL and CSV are streamed row by row, YAML read whole.
pub const DATASET: Limit = Limit { kind: "a dataset of cases", bytes: 1024 * MIB };
/// A response-cache entry (the answer cap is 16 MiB by default; an entry also holds the request and a
/// line per chunk).
pub const CACHE_ENTRY: Limit = Limit { kind: "a response-cache entry", bytes: 64 * MIB };
/// A recorded transcript (`--record`, `--transcript`, `answers/`).
pub const TRANSCRIPT: Limit = Limit { kind: "a transcript", bytes: 256 * MIB };
/// An answer or any text given to `parse`, `truncate` or `signature` (a file or standard input).
pub const INPUT_TEXT: Limit = Limit { kind: "an input file", bytes: 256 * MIB };
/// The run history (append-only JSONL).
pub const HISTORY: Limit = Limit { kind: "the history file", bytes: 1024 * MIB };
/// One eval record.
pub const EVAL_RECORD: Limit = Limit { kind: "an eval record", bytes: 512 * MIB };
/// An optimization record (`<data dir>/optimizations/`).
pub const OPTIMIZATION_RECORD: Limit = Limit { kind: "an optimization record", bytes: 512 * MIB };
/// A batch manifest.
pub const MANIFEST: Limit = Limit { kind: "a batch manifest", bytes: 256 * MIB };
/// The workbench's unsaved edits of one prompt.
pub const RECOVERY: Limit = Limit { kind: "a recovery file", bytes: 128 * MIB };
/// A status file of the system (`/proc/self/status`), read by the benches.
pub const SYSTEM_STATUS: Limit = Limit { kind: "a system status file", bytes: MIB };
/// What a GGUF model file is called in errors (streamed by its reader: [`open`] checks it is a file).
pub const GGUF: &str = "a GGUF model file";
/// A keymap or theme file.
pub const SETTINGS: Limit = Limit { kind: "a settings file", bytes: MIB };

/// A file that cannot be read: which one, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}{}{problem}", .path.display(), if matches!(.problem, Problem::NotUtf8 { .. }) { ":" } else { ": " })]
pub struct FileError {
    pub path: PathBuf,
    pub problem: Problem,
}

/// What is wrong with a file that cannot be read (its path aside).
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// It cannot be opened or inspected (missing, no permission, ...).
    #[error("cannot open: {0}")]
    Open(std::io::Error),
    /// It is a folder, a pipe, a device or a socket.
    #[error("{what}, not a regular file ({kind} is read from a regular file only)")]
    NotRegular { what: &'static str, kind: &'static str },
    /// It holds more than its kind's cap.
    #[error("larger than {}, the most {} may hold", size_text(.0.bytes), .0.kind)]
    TooLarge(Limit),
    /// Reading failed part-way.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// It is not UTF-8 text (`line:column` first, so the error reads `file:line:column: ...`).
    #[error("{line}:{column}: not UTF-8 (byte 0x{byte:02x})")]
    NotUtf8 { line: usize, column: usize, byte: u8 },
}

impl FileError {
    fn new(path: &Path, problem: Problem) -> Self {
        Self { path: path.to_path_buf(), problem }
    }

    /// Whether the file does not exist (a missing history or cache entry is no error).
    pub fn is_not_found(&self) -> bool {
        matches!(&self.problem, Problem::Open(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// `bytes` as people write a size: `64 MiB`, `1 GiB`, else `N bytes`.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// Opens `path` for reading if it is a regular file (a link is followed), without blocking on a
/// FIFO; `kind` names what it should be in the error. For readers that stream a big file (a GGUF,
/// a wheel) and check lengths themselves; everything else reads through [`read`].
pub fn open(path: &Path, kind: &'static str) -> Result<(File, Metadata), FileError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO with no writer would block open(2) forever; non-blocking, it opens and is refused below.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let open_error = |e| FileError::new(path, Problem::Open(e));
    let file = options.open(path).map_err(open_error)?;
    let metadata = file.metadata().map_err(open_error)?;
    if !metadata.is_file() {
        return Err(FileError::new(path, Problem::NotRegular { what: what_it_is(&metadata), kind }));
    }
    Ok((file, metadata))
}

/// [`open`], refused past `limit` (for a file read in place, memory-mapped).
pub fn open_within(path: &Path, limit: Limit) -> Result<(File, Metadata), FileError> {
    let (file, metadata) = open(path, limit.kind)?;
    if metadata.len() > limit.bytes {
        return Err(FileError::new(path, Problem::TooLarge(limit)));
    }
    Ok((file, metadata))
}

/// The bytes of the regular file at `path`, refused past `limit`.
pub fn read(path: &Path, limit: Limit) -> Result<Vec<u8>, FileError> {
    let (file, metadata) = open_within(path, limit)?;
    read_from(file, path, limit, metadata.len())
}

/// The text of the regular file at `path`, refused past `limit` or when it is not UTF-8.
pub fn read_text(path: &Path, limit: Limit) -> Result<String, FileError> {
    utf8(read(path, limit)?, path)
}

/// At most `limit` bytes from `reader` (standard input, a file whose length said nothing, such as one
/// in `/proc`), refused past it; `path` names it in errors. `expected` sizes the buffer; when it is
/// short, the buffer doubles but never past the cap, so memory stays within the cap and one chunk.
pub fn read_from(reader: impl Read, path: &Path, limit: Limit, expected: u64) -> Result<Vec<u8>, FileError> {
    let most = usize::try_from(limit.bytes).unwrap_or(usize::MAX);
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(usize::MAX).min(most));
    let mut reader = reader.take(limit.bytes.saturating_add(1));
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FileError::new(path, Problem::Read(e))),
        };
        if bytes.len().saturating_add(n) > most {
            return Err(FileError::new(path, Problem::TooLarge(limit)));
        }
        if bytes.capacity() - bytes.len() < n {
            let grown = bytes.capacity().saturating_mul(2).max(bytes.len() + n).min(most);
            bytes.reserve_exact(grown - bytes.len());
        }
        bytes.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
}

/// `bytes` as text, or the place of the first byte that is not UTF-8.
pub fn utf8(bytes: Vec<u8>, path: &Path) -> Result<String, FileError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let good = e.as_bytes().get(..at).unwrap_or_default();
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(good.get(line_start..).unwrap_or_default()).chars().count() + 1;
        let byte = e.as_bytes().get(at).copied().unwrap_or_default();
        FileError::new(path, Problem::NotUtf8 { line, column, byte })
    })
}

fn what_it_is(metadata: &Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a plain file"
}

/// Why a name cannot be a file inside a folder, as written (before any link is followed): an
/// absolute path or a `..` that climbs out. `None` when the name stays inside as written.
pub fn leaves_folder(name: &Path) -> Option<&'static str> {
    let mut depth = 0usize;
    for component in name.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return Some("an absolute path"),
            Component::ParentDir if depth == 0 => return Some("a `..` that leaves the folder"),
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
        }
    }
    if depth == 0 {
        return Some("the folder itself, not a file in it");
    }
    None
}

/// Where `name` (relative to `folder`) really is, when it stays inside `folder` once every link is
/// followed; else why not. A name that does not exist yet is placed by its parent folder (which must
/// exist and stay inside), so a file about to be written is checked the same way.
pub fn inside(folder: &Path, name: &Path) -> Result<PathBuf, String> {
    if let Some(why) = leaves_folder(name) {
        return Err(why.to_string());
    }
    let folder = if folder.as_os_str().is_empty() { Path::new(".") } else { folder };
    let root = std::fs::canonicalize(folder).map_err(|e| format!("its folder {}: {e}", folder.display()))?;
    let joined = folder.join(name);
    let real = match std::fs::canonicalize(&joined) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = joined.parent().unwrap_or(folder);
            let file = joined.file_name().ok_or_else(|| format!("{}: no file name", joined.display()))?;
            match std::fs::canonicalize(parent) {
                Ok(dir) => dir.join(file),
                Err(e) => return Err(format!("{}: {e}", joined.display())),
            }
        }
        Err(e) => return Err(format!("{}: {e}", joined.display())),
    };
    if real.starts_with(&root) && real != root {
        Ok(real)
    } else {
        Err(format!("a link to {}, outside the folder", real.display()))
    }
}

/// Whether `a` and `b` are the same file once links are followed (`false` when either cannot be
/// resolved, e.g. does not exist yet).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// An output (`flag`'s file) that is one of `inputs` (links followed) is refused: writing it would
/// replace an input. The error names the flag, the output and the input.
pub fn refuse_overwriting(flag: &str, output: &Path, inputs: &[PathBuf]) -> Result<(), String> {
    match inputs.iter().find(|input| same_file(output, input)) {
        Some(input) => Err(format!(
            "{flag} {}: that is {}, an input of this command; an output never replaces an input",
            output.display(),
            input.display()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
