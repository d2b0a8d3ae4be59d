//! Which stored weights a folder keeps: the file just written, the other models' files used most
//! recently up to [`KEEP_BYTES`], and nothing of this GGUF's older files or of writers that ended.

use std::path::Path;

/// Bytes of stored weights kept in a folder, the file just written among them: the other models' files
/// stay while they fit, the most recently used first. Enough for a few small models (SmolLM2's 96 MB,
/// Gemma 3 270M's 247 MB, a 0.6B Q4_K_M's 396 MB) or one 7B; a model switched back to maps its file
/// instead of rebuilding it (2–5 s for the 0.6B file on this project's 2-core machine).
pub const KEEP_BYTES: u64 = 4 << 30;

/// Removes what the folder of `kept` holds of ours and no longer needs: the stored weights of the same
/// GGUF name made from another identity (the file changed since), half-written files whose writer is
/// no longer running, and other models' stored weights past `budget` bytes (with `kept`'s), the least
/// recently used first (a file's modified time: written, or marked by [`super::load`]). A file another
/// process is reading stays readable to it (it has it open); one it is about to read is a miss there,
/// rebuilt as any missing file is.
pub(super) fn prune(kept: &Path, budget: u64) {
    let Some(dir) = kept.parent() else { return };
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let kept_stem = kept.file_name().and_then(|n| weights_stem(&n.to_string_lossy()).map(str::to_owned));
    let mut others = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() || path == kept {
            continue;
        }
        if let Some(pid) = temp_writer(&name) {
            if !process_is_running(pid) {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        let Some(stem) = weights_stem(&name) else { continue };
        if kept_stem.as_deref() == Some(stem) {
            let _ = std::fs::remove_file(&path);
        } else {
            others.push((meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len(), path));
        }
    }
    others.sort_by_key(|other| std::cmp::Reverse(other.0));
    let mut total = std::fs::metadata(kept).map_or(0, |m| m.len());
    for (_, len, path) in others {
        if total.saturating_add(len) <= budget {
            total += len;
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The GGUF name of a stored-weights file's name ([`super::file_for`]: `<stem>.<16 hex digits>.weights`).
fn weights_stem(name: &str) -> Option<&str> {
    if name.starts_with('.') {
        return None;
    }
    let (stem, hash) = name.strip_suffix(".weights")?.rsplit_once('.')?;
    (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(stem)
}

/// The process writing a temporary file of [`super::write_atomic`] (`.<name>.weights.<pid>.<n>.tmp`).
fn temp_writer(name: &str) -> Option<u32> {
    let inner = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let mut parts = inner.rsplitn(3, '.');
    let (_n, pid, file) = (parts.next()?, parts.next()?, parts.next()?);
    file.ends_with(".weights").then(|| pid.parse().ok()).flatten()
}

/// Whether a process `pid` exists (where that cannot be told: yes, so nothing of it is removed).
fn process_is_running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        // SAFETY: signal 0 sends nothing; kill only reports whether the process exists.
        let answer = unsafe { libc::kill(pid, 0) };
        answer == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{identity, matrices, temp_dir};
    use super::super::{load, save, Matrix};
    use super::*;

    /// The names of the files in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    /// Writes `bytes` at `path` with a modified time `age` seconds ago.
    fn aged(path: &Path, bytes: usize, age: u64) {
        std::fs::write(path, vec![0u8; bytes]).unwrap();
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
    }

    #[test]
    fn writing_a_models_weights_removes_its_older_files_and_dead_writers_half_files_and_keeps_other_models() {
        let dir = temp_dir("others");
        let older = dir.join("model.00000000000000aa.weights");
        let other = dir.join("other-model.00000000000000bb.weights");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ended = child.id();
        child.wait().unwrap();
        let dead = dir.join(format!(".model.00000000000000aa.weights.{ended}.0.tmp"));
        let live = dir.join(format!(".other-model.00000000000000bb.weights.{}.7.tmp", std::process::id()));
        let unrelated = dir.join("notes.txt");
        let unlike = dir.join("model.not-a-hash.weights");
        for path in [&older, &other, &dead, &live, &unrelated, &unlike] {
            std::fs::write(path, b"old").unwrap();
        }
        let kept = dir.join("model.00000000000000cc.weights");
        let all = matrices();
        let refs: Vec<(&str, &Matrix)> = all.iter().map(|(n, m)| (n.as_str(), m)).collect();
        save(&kept, &identity(), &refs).unwrap();
        let live_name = live.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            names(&dir),
            [
                live_name.as_str(),
                "model.00000000000000cc.weights",
                "model.not-a-hash.weights",
                "notes.txt",
                "other-model.00000000000000bb.weights"
            ]
        );
        assert_eq!(load(&kept, &identity()).unwrap().len(), 7);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn past_the_budget_the_least_recently_used_models_go_first() {
        let dir = temp_dir("budget");
        let kept = dir.join("new.00000000000000aa.weights");
        aged(&kept, 300, 0);
        // Used 10, 20, 30 and 40 seconds ago; 100 bytes each but the second.
        for (name, bytes, age) in [("a", 100, 10), ("b", 500, 20), ("c", 100, 30), ("d", 100, 40)] {
            aged(&dir.join(format!("{name}.00000000000000bb.weights")), bytes, age);
        }
        // 300 + a 100 fits 500; b's 500 does not (removed), c's 100 still does, d's does not.
        prune(&kept, 500);
        assert_eq!(
            names(&dir),
            ["a.00000000000000bb.weights", "c.00000000000000bb.weights", "new.00000000000000aa.weights"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_load_marks_its_file_used_so_it_outlives_files_used_since() {
        let dir = temp_dir("used");
        let all = matrices();
        let refs: Vec<(&str, &Matrix)> = all.iter().map(|(n, m)| (n.as_str(), m)).collect();
        let first = dir.join("first.00000000000000aa.weights");
        save(&first, &identity(), &refs).unwrap();
        let size = std::fs::metadata(&first).unwrap().len();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options().write(true).open(&first).unwrap().set_modified(long_ago).unwrap();
        let second = dir.join("second.00000000000000bb.weights");
        aged(&second, size as usize, 60);
        assert_eq!(load(&first, &identity()).unwrap().len(), 7);
        assert!(
            std::fs::metadata(&first).unwrap().modified().unwrap() > long_ago + std::time::Duration::from_secs(3000)
        );
        // Room for two: the one written and the one loaded last; the second was used before that load.
        let third = dir.join("third.00000000000000cc.weights");
        aged(&third, size as usize, 0);
        prune(&third, 2 * size);
        assert_eq!(names(&dir), ["first.00000000000000aa.weights", "third.00000000000000cc.weights"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stored_weights_name_gives_its_models_name() {
        assert_eq!(weights_stem("gemma-3-270m-q4_k_m.0123456789abcdef.weights"), Some("gemma-3-270m-q4_k_m"));
        assert_eq!(weights_stem("a.b.0123456789ABCDEF.weights"), Some("a.b"));
        for name in [
            ".hidden.0123456789abcdef.weights",
            "x.0123.weights",
            "x.0123456789abcdeg.weights",
            "x.weights",
            "notes.txt",
        ] {
            assert_eq!(weights_stem(name), None, "{name}");
        }
    }
}
