//! A name from a file, an answer or a server becoming part of a path goes through [`file_name`]: the
//! one place that keeps it a single, harmless file-name component inside the folder it is joined to.
//! No `..`, no separator, no absolute path, no NUL or control character, no hidden file, no device
//! name, no name too long for the file system, and two different names never share a file, not even
//! on a file system that ignores case.

use std::path::{Path, PathBuf};

/// The longest file name [`file_name`] makes, in bytes (well under every file system's 255).
pub const MAX_NAME_BYTES: usize = 96;

/// `name` as one file-name component. A plain name (lowercase ASCII letters, digits, `-`, `_` and
/// `.`, not starting with a dot, not a Windows device name, not too long) stays as it is; any other
/// name has each other character written `_`, a leading dot written `_`, is cut to fit, and ends with
/// `-` and a hash of the whole name, so names that differ (in case too) stay apart.
pub fn file_name(name: &str) -> String {
    if is_plain(name) {
        return name.to_string();
    }
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' })
        .take(MAX_NAME_BYTES - 9)
        .collect();
    if out.starts_with('.') || out.is_empty() {
        out.insert(0, '_');
    }
    out.push_str(&format!("-{:08x}", fnv1a(name.as_bytes()) as u32));
    out
}

/// `dir/<file_name(name)><suffix>`: always a direct child of `dir` (`suffix`, such as `.jsonl`, is the
/// caller's own text).
pub fn inside(dir: &Path, name: &str, suffix: &str) -> PathBuf {
    dir.join(format!("{}{suffix}", file_name(name)))
}

/// Whether `name` is an environment variable's name (`A_KEY`: letters, digits and `_`, not starting
/// with a digit): what a prompt's `key_env` and a promptfoo config's `apiKeyEnvar` must be.
pub fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

fn is_plain(name: &str) -> bool {
    const DEVICES: [&str; 4] = ["con", "prn", "aux", "nul"];
    let stem = name.split('.').next().unwrap_or_default();
    let device = DEVICES.contains(&stem)
        || ((stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.len() == 4
            && stem.ends_with(|c: char| c.is_ascii_digit()));
    !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && !name.starts_with('.')
        && !device
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'))
}

/// FNV-1a, 64 bits: a hash that is the same in every build (the file names it makes must be).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stays_inside(name: &str) {
        let dir = Path::new("/data/answers");
        let path = inside(dir, name, ".jsonl");
        assert_eq!(path.parent(), Some(dir), "{name:?} → {}", path.display());
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        assert!(file.len() <= MAX_NAME_BYTES + 6, "{name:?} → {file}");
        assert!(!file.starts_with('.') && !file.contains(['/', '\\', '\0']), "{name:?} → {file}");
        assert!(file.chars().all(|c| c.is_ascii_graphic()), "{name:?} → {file}");
    }

    #[test]
    fn plain_names_stay_as_they_are() {
        for name in ["extract-topics", "geology", "in_stock", "v1.2", "agent-kg-extract-json"] {
            assert_eq!(file_name(name), name);
        }
    }

    #[test]
    fn names_an_attacker_would_pick_stay_inside_their_folder() {
        let long = "a".repeat(10_000);
        for name in [
            "..",
            ".",
            "../../x",
            "/etc/passwd",
            "a/../../b",
            "C:\\Windows\\x",
            "..\\..\\x",
            "nul\0byte",
            "\0",
            "",
            &long,
            ".hidden",
            "con",
            "NUL",
            "com1",
            "lpt9.txt",
            "tab\there",
            "\u{1b}]0;title\u{7}",
            "名前",
            " ",
        ] {
            stays_inside(name);
        }
        assert_eq!(file_name(".."), format!("_..-{:08x}", fnv1a(b"..") as u32));
    }

    #[test]
    fn different_names_never_share_a_file_even_ignoring_case() {
        let names = ["Topics", "topics", "TOPICS", "a/b", "a_b", "a b", "a\\b", &"x".repeat(200), &"x".repeat(201)];
        let files: Vec<String> = names.iter().map(|n| file_name(n).to_ascii_lowercase()).collect();
        for (i, a) in files.iter().enumerate() {
            for (j, b) in files.iter().enumerate() {
                assert!(i == j || a != b, "{:?} and {:?} both map to {a}", names[i], names[j]);
            }
        }
    }
}
