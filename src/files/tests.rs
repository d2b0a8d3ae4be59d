//! Tests of the bounded reader: caps, non-regular files, names that leave their folder.
use super::*;

const SMALL: Limit = Limit { kind: "a test file", bytes: 16 };

/// A named pipe at `path`, made by `mkfifo(1)` (no unsafe code outside the engine).
#[cfg(unix)]
fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg("-m").arg("600").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn a_regular_file_is_read_up_to_its_cap_and_refused_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.txt");
    std::fs::write(&path, "x".repeat(16)).unwrap();
    assert_eq!(read_text(&path, SMALL).unwrap(), "x".repeat(16));
    std::fs::write(&path, "x".repeat(17)).unwrap();
    let error = read(&path, SMALL).unwrap_err().to_string();
    assert!(
        error.contains("f.txt") && error.contains("larger than 16 bytes, the most a test file may hold"),
        "{error}"
    );
    let error = read(&dir.path().join("missing"), SMALL).unwrap_err();
    assert!(error.is_not_found() && error.to_string().contains("missing"), "{error}");
    std::fs::write(&path, b"ok\n\xffno").unwrap();
    let error = read_text(&path, SMALL).unwrap_err().to_string();
    assert!(error.ends_with("f.txt:2:1: not UTF-8 (byte 0xff)"), "{error}");
}

#[test]
fn an_endless_reader_stops_one_byte_past_the_cap() {
    let error = read_from(std::io::repeat(0), Path::new("<stdin>"), SMALL, 0).unwrap_err().to_string();
    assert_eq!(error, "<stdin>: larger than 16 bytes, the most a test file may hold");
    assert_eq!(size_text(64 << 20), "64 MiB");
    assert_eq!(size_text(1 << 30), "1 GiB");
}

#[cfg(unix)]
#[test]
fn devices_pipes_and_folders_are_refused_without_reading_or_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("pipe");
    fifo(&pipe);
    let linked = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &linked).unwrap();
    for (path, what) in [
        (Path::new("/dev/zero"), "a device"),
        (linked.as_path(), "a device"),
        (pipe.as_path(), "a named pipe (FIFO)"),
        (dir.path(), "a folder"),
    ] {
        let error = read(path, PROMPT_FILE).unwrap_err().to_string();
        assert!(error.starts_with(&path.display().to_string()), "{error}");
        assert!(error.contains(what) && error.contains("a prompt file is read from a regular file only"), "{error}");
        assert!(matches!(open(path, "a model"), Err(FileError { problem: Problem::NotRegular { .. }, .. })));
    }
}

#[test]
fn names_that_leave_the_folder_as_written_are_refused() {
    assert_eq!(leaves_folder(Path::new("gold/a.jsonl")), None);
    assert_eq!(leaves_folder(Path::new("gold/../a.jsonl")), None);
    assert_eq!(leaves_folder(Path::new("./a.json")), None);
    assert_eq!(leaves_folder(Path::new("../secret.json")), Some("a `..` that leaves the folder"));
    assert_eq!(leaves_folder(Path::new("gold/../../secret.json")), Some("a `..` that leaves the folder"));
    assert_eq!(leaves_folder(Path::new("/etc/passwd")), Some("an absolute path"));
    assert_eq!(leaves_folder(Path::new(".")), Some("the folder itself, not a file in it"));
}

#[cfg(unix)]
#[test]
fn links_are_followed_before_the_folder_check() {
    let top = tempfile::tempdir().unwrap();
    let folder = top.path().join("prompts");
    std::fs::create_dir_all(folder.join("gold")).unwrap();
    std::fs::write(top.path().join("secret.json"), "{}").unwrap();
    std::fs::write(folder.join("gold/a.json"), "[]").unwrap();
    std::os::unix::fs::symlink(top.path().join("secret.json"), folder.join("out.json")).unwrap();
    std::os::unix::fs::symlink(top.path(), folder.join("up")).unwrap();
    std::os::unix::fs::symlink("gold/a.json", folder.join("alias.json")).unwrap();
    let real = std::fs::canonicalize(&folder).unwrap();
    assert_eq!(inside(&folder, Path::new("gold/a.json")).unwrap(), real.join("gold/a.json"));
    assert_eq!(inside(&folder, Path::new("alias.json")).unwrap(), real.join("gold/a.json"), "a link inside");
    assert_eq!(inside(&folder, Path::new("gold/new.json")).unwrap(), real.join("gold/new.json"), "not written yet");
    for name in ["out.json", "up/secret.json", "up/prompts/../secret.json"] {
        let error = inside(&folder, Path::new(name)).unwrap_err();
        assert!(error.contains("outside the folder") || error.contains(".."), "{name}: {error}");
    }
    assert!(same_file(&folder.join("alias.json"), &folder.join("gold/a.json")));
    assert!(!same_file(&folder.join("alias.json"), &folder.join("gold/missing.json")));
}

#[cfg(unix)]
#[test]
fn an_output_that_is_an_input_is_refused_however_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("a.toml");
    std::fs::write(&prompt, "template = 'x'").unwrap();
    std::os::unix::fs::symlink(&prompt, dir.path().join("link.xml")).unwrap();
    let inputs = vec![prompt.clone()];
    for output in [prompt.clone(), dir.path().join("./a.toml"), dir.path().join("link.xml")] {
        let error = refuse_overwriting("--junit", &output, &inputs).unwrap_err();
        assert!(error.starts_with(&format!("--junit {}: that is ", output.display())), "{error}");
        assert!(error.contains("an input of this command"), "{error}");
    }
    assert_eq!(refuse_overwriting("--csv", &dir.path().join("cells.csv"), &inputs), Ok(()), "not written yet");
}
