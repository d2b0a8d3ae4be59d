//! The response cache on disk: one file per request, `<dir>/<2 hex>/<64 hex>.jsonl` named by the key's
//! SHA-256, holding a first line with the key's text and then the answer's transcript (CLI.md's
//! format). The first line also holds a SHA-256 of the key and the transcript, so an entry edited by
//! hand is never served as an answer. Writes go through a temporary file and a rename
//! (`prompt::file::write_atomic`), so concurrent writers of one entry leave one whole entry; an entry
//! that cannot be read or whose checksum differs is a miss and is removed (the next answer is stored
//! anew). Nothing here fails a run: every problem is a miss or an entry not written.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::key::CacheKey;
use crate::files;
use crate::prompt::file::write_atomic;
use crate::provider::cache_dir::cache_dir;
use crate::truncate::transcript::Transcript;

/// The folder of the response cache inside the cache directory.
pub const RESPONSES_DIR: &str = "responses";
/// The largest entry written or read (the answer cap, `--max-answer-bytes`, is 16 MiB by default;
/// an entry also holds the request and one line per chunk).
pub const MAX_ENTRY_BYTES: u64 = files::CACHE_ENTRY.bytes;
/// The entry format: a change here makes every older entry a miss (2: the checksum).
const ENTRY_VERSION: u32 = 2;

/// An entry's first line.
#[derive(Serialize, Deserialize)]
struct Head {
    response_cache: u32,
    key: String,
    /// SHA-256 (hex) of [`checksum`]'s text: the key and the transcript as written.
    sha256: String,
}

/// The checksum an entry of `key` holding `transcript` (its text after the first line) carries.
fn checksum(key: &str, transcript: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(key.as_bytes());
    hasher.update(b"\n");
    hasher.update(transcript.as_bytes());
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The response cache in one folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    /// The cache in `dir` (created when the first entry is written).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `<cache dir>/responses` (`TUNEBENCH_CACHE_DIR`, else the platform's); `None` when the platform
    /// has no cache directory.
    pub fn default_dir() -> Option<Self> {
        cache_dir().map(|dir| Self::at(dir.join(RESPONSES_DIR)))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the answer to `key` is kept.
    pub fn entry_path(&self, key: &CacheKey) -> PathBuf {
        let shard = key.hash.get(..2).unwrap_or("00");
        self.dir.join(shard).join(format!("{}.jsonl", key.hash))
    }

    /// The recorded answer to `key`, if there is a whole one. An unreadable entry (cut, of another
    /// format, edited (its checksum differs), not a complete answer, not a regular file, past
    /// [`MAX_ENTRY_BYTES`]) is removed; an entry of another key with the same hash is left alone (the
    /// next answer to `key` replaces it).
    pub fn get(&self, key: &CacheKey) -> Option<Transcript> {
        let path = self.entry_path(key);
        let read = match files::read_text(&path, files::CACHE_ENTRY) {
            Err(e) if e.is_not_found() => return None,
            read => read.ok(),
        };
        let entry = read.as_deref().and_then(|text| {
            let (head, transcript) = text.split_once('\n')?;
            let head: Head = serde_json::from_str(head).ok()?;
            let whole = head.response_cache == ENTRY_VERSION && head.sha256 == checksum(&head.key, transcript);
            whole.then_some((head.key, transcript))
        });
        let Some((stored_key, transcript)) = entry else {
            remove(&path);
            return None;
        };
        if stored_key != key.text {
            return None;
        }
        match Transcript::parse(transcript) {
            Ok(transcript) if is_complete(&transcript) => Some(transcript),
            _ => {
                remove(&path);
                None
            }
        }
    }

    /// Keeps `transcript` as the answer to `key` when it is complete (see [`is_complete`]); whether it
    /// was written.
    pub fn put(&self, key: &CacheKey, transcript: &Transcript) -> bool {
        if !is_complete(transcript) {
            return false;
        }
        let body = transcript.to_jsonl();
        let head = Head { response_cache: ENTRY_VERSION, key: key.text.clone(), sha256: checksum(&key.text, &body) };
        let Ok(head) = serde_json::to_string(&head) else { return false };
        let text = format!("{head}\n{body}");
        if text.len() as u64 > MAX_ENTRY_BYTES {
            return false;
        }
        let path = self.entry_path(key);
        let made = path.parent().is_none_or(|dir| std::fs::create_dir_all(dir).is_ok());
        made && write_atomic(&path, &text).is_ok()
    }
}

/// Whether a transcript is a whole answer worth keeping: it ended `stop` or `length` with no error.
pub fn is_complete(transcript: &Transcript) -> bool {
    transcript
        .end
        .as_ref()
        .is_some_and(|end| end.error.is_none() && matches!(end.finish_reason.as_deref(), Some("stop" | "length")))
}

fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::truncate::transcript::{Chunk, End, Header};

    fn transcript(finish: Option<&str>) -> Transcript {
        Transcript {
            header: Header { transcript: 1, provider: "openai".into(), model: "m".into(), ..Header::default() },
            chunks: vec![Chunk { t_ms: 3, delta: "{\"a\": 1}".into(), token: None, ..Chunk::default() }],
            end: Some(End { t_ms: 5, finish_reason: finish.map(str::to_string), ..End::default() }),
        }
    }

    fn key_of(text: &str) -> CacheKey {
        CacheKey::http("openai", "m", &crate::provider::Outgoing::post("http://h/v1".into(), text.into()))
    }

    #[test]
    fn complete_answers_are_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::at(dir.path());
        let key = key_of("a");
        assert_eq!(cache.get(&key), None);
        assert!(cache.put(&key, &transcript(Some("length"))));
        assert_eq!(cache.get(&key), Some(transcript(Some("length"))));
        let path = cache.entry_path(&key);
        assert!(path.starts_with(dir.path().join(&key.hash[..2])), "{}", path.display());
        for unfinished in [None, Some("interrupted"), Some("content_filter")] {
            assert!(!cache.put(&key_of("b"), &transcript(unfinished)), "{unfinished:?}");
        }
        let mut failed = transcript(Some("stop"));
        failed.end = Some(End { t_ms: 5, error: Some(serde_json::json!({"kind": "broken"})), ..End::default() });
        assert!(!cache.put(&key_of("b"), &failed));
        assert!(!cache.entry_path(&key_of("b")).exists());
    }

    #[test]
    fn a_damaged_entry_is_a_miss_and_is_removed_and_a_collision_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::at(dir.path());
        let key = key_of("a");
        let path = cache.entry_path(&key);
        for damage in ["", "not json\n", "{\"response_cache\":1,\"key\":\"x\"}", "{\"response_cache\":9}\n"] {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, damage).unwrap();
            assert_eq!(cache.get(&key), None, "{damage:?}");
            assert!(!path.exists(), "{damage:?}");
        }
        assert!(cache.put(&key, &transcript(Some("stop"))));
        let whole = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 10]).unwrap();
        assert_eq!(cache.get(&key), None, "a cut end line");
        assert!(!path.exists());
        // Another key's entry under this hash: not ours, not removed.
        let other = CacheKey { text: "another request".into(), hash: key.hash.clone() };
        assert!(cache.put(&other, &transcript(Some("stop"))));
        assert_eq!(cache.get(&key), None);
        assert!(path.exists());
        assert!(cache.get(&other).is_some());
    }

    #[test]
    fn an_entry_edited_by_hand_is_a_miss_and_is_stored_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::at(dir.path());
        let key = key_of("a");
        let mut answer = transcript(Some("stop"));
        answer.chunks[0].delta = "{\"rock\": \"basalt\"}".into();
        assert!(cache.put(&key, &answer));
        let path = cache.entry_path(&key);
        let whole = std::fs::read_to_string(&path).unwrap();
        assert!(whole.contains("basalt"), "{whole}");
        // The same length, still a complete transcript: only the checksum tells.
        std::fs::write(&path, whole.replace("basalt", "gabbro")).unwrap();
        assert_eq!(cache.get(&key), None, "an edited answer is not served");
        assert!(!path.exists(), "and is removed");
        assert!(cache.put(&key, &answer));
        assert_eq!(cache.get(&key), Some(answer));
    }

    #[cfg(unix)]
    #[test]
    fn a_device_or_a_pipe_as_an_entry_is_a_miss_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::at(dir.path());
        let key = key_of("a");
        let path = cache.entry_path(&key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert_eq!(cache.get(&key), None, "/dev/zero");
        // A named pipe, made by mkfifo(1) (no unsafe code outside the engine).
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        assert_eq!(cache.get(&key), None, "a FIFO");
        assert!(cache.put(&key, &transcript(Some("stop"))), "the next answer replaces it");
        assert_eq!(cache.get(&key), Some(transcript(Some("stop"))));
    }
}
