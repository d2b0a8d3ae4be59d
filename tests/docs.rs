//! The docs hold: every ```` ```sh runnable ```` block of README.md and docs/*.md runs as written on a fresh machine (no server, no model) with the exit it promises, every relative link points at a file (and heading) that exists, and the README stays a front page of at most 250 lines.

#![cfg(unix)] // the blocks are shell lines, run with `sh -c`
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a documented command may take: they read sample files, so seconds are plenty.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);
const README_MAX_LINES: usize = 250;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then every docs/*.md in name order.
fn doc_files() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    let mut files = vec![root().join("README.md")];
    files.extend(docs);
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// A shell command from a runnable block: where it starts, its text, the exit it promises.
#[derive(Debug)]
struct Documented {
    line: usize,
    text: String,
    exit: i32,
}

/// How a fence line opens or closes a block: its backtick count and its info string.
fn fence(line: &str) -> Option<(usize, &str)> {
    let trimmed = line.trim_start();
    let ticks = trimmed.chars().take_while(|&c| c == '`').count();
    (ticks >= 3).then(|| (ticks, trimmed[ticks..].trim()))
}

/// What the shell sees of a command: whether it ends inside quotes or on a line continuation, and its
/// last comment (text after an unquoted `#` that starts a word).
struct Scan {
    complete: bool,
    comment: Option<String>,
}

fn scan(text: &str) -> Scan {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut comment: Option<String> = None;
    let mut in_comment = false;
    let mut previous = '\n';
    let mut continued = false;
    for c in text.chars() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
            } else {
                comment.as_mut().unwrap().push(c);
            }
            previous = c;
            continue;
        }
        continued = false;
        if escaped {
            escaped = false;
            continued = c == '\n';
        } else if single {
            single = c != '\'';
        } else if c == '\\' {
            escaped = true;
        } else if double {
            double = c != '"';
        } else if c == '\'' {
            single = true;
        } else if c == '"' {
            double = true;
        } else if c == '#' && previous.is_whitespace() {
            in_comment = true;
            comment = Some(String::new());
        }
        previous = c;
    }
    Scan { complete: !single && !double && !escaped && !continued, comment }
}

/// The exit a command promises: N when its comment ends in `exits N`, else 0.
fn promised_exit(comment: Option<&str>) -> i32 {
    let words: Vec<&str> = comment.unwrap_or("").split_whitespace().collect();
    match words.as_slice() {
        [.., "exits", n] => n.parse().unwrap_or_else(|_| panic!("`exits {n}`: not an exit code")),
        _ => 0,
    }
}

/// The commands of every ```` ```sh runnable ```` block in `text`: a command is a non-empty line that is
/// not a comment, joined with the lines that follow while it is inside quotes or ends in `\`.
fn runnable_commands(file: &Path, text: &str) -> Vec<Documented> {
    let mut commands = Vec::new();
    let mut open: Option<(usize, bool)> = None; // the fence's backticks, whether the block is runnable
    let mut pending: Option<(usize, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        match (open, fence(line)) {
            (None, Some((ticks, info))) => {
                let mut words = info.split_whitespace();
                let runnable = words.next() == Some("sh") && words.any(|w| w == "runnable");
                open = Some((ticks, runnable));
                continue;
            }
            (Some((ticks, _)), Some((closing, ""))) if closing >= ticks && pending.is_none() => {
                open = None;
                continue;
            }
            (Some((_, true)), _) => {}
            _ => continue,
        }
        let started = match pending.take() {
            Some((start, mut so_far)) => {
                so_far.push('\n');
                so_far.push_str(line);
                (start, so_far)
            }
            None if line.trim().is_empty() || line.trim_start().starts_with('#') => continue,
            None => (number, line.to_string()),
        };
        let scanned = scan(&started.1);
        if scanned.complete {
            let exit = promised_exit(scanned.comment.as_deref());
            commands.push(Documented { line: started.0, text: started.1, exit });
        } else {
            pending = Some(started);
        }
    }
    if let Some((start, _)) = pending {
        panic!("{}:{start}: a runnable command never ends (open quote or trailing `\\`)", shown(file));
    }
    assert!(open.is_none(), "{}: a code block is never closed", shown(file));
    commands
}

/// Runs `command` with `sh -c` in the repository's root, `tunebench` on PATH, the data and cache
/// directories in `scratch`, standard input closed. Returns the exit code (None: killed), stdout and stderr.
fn run_documented(command: &str, bin_dir: &Path, scratch: &Path, n: usize) -> (Option<i32>, String, String) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let out_path = scratch.join(format!("out-{n}"));
    let err_path = scratch.join(format!("err-{n}"));
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(root())
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("TUNEBENCH_DATA_DIR", scratch.join("data"))
            .env("TUNEBENCH_CACHE_DIR", scratch.join("cache"))
            .env("TUNEBENCH_CONFIG_DIR", scratch.join("config"))
            .stdin(Stdio::null())
            .stdout(fs::File::create(&out_path).unwrap())
            .stderr(fs::File::create(&err_path).unwrap())
            .process_group(0)
            .spawn()
            .expect("sh starts")
    };
    let deadline = Instant::now() + COMMAND_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            // The whole process group: sh and whatever it started.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&fs::read(&out_path).unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&fs::read(&err_path).unwrap()).into_owned();
    (status.and_then(|s| s.code()), stdout, stderr)
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[test]
fn every_runnable_block_runs_as_documented() {
    let scratch = tempfile::tempdir().unwrap();
    let bin_dir = scratch.path().join("bin");
    fs::create_dir(&bin_dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_tunebench"), bin_dir.join("tunebench")).unwrap();

    let mut failures = Vec::new();
    let mut ran = 0;
    for file in doc_files() {
        let text = fs::read_to_string(&file).unwrap();
        for command in runnable_commands(&file, &text) {
            ran += 1;
            let (code, stdout, stderr) = run_documented(&command.text, &bin_dir, scratch.path(), ran);
            if code != Some(command.exit) {
                let got = code.map_or_else(
                    || format!("no exit code (killed after {COMMAND_TIMEOUT:?}?)"),
                    |c| format!("exit {c}"),
                );
                failures.push(format!(
                    "{}:{}: expected exit {}, got {got}\n  $ {}\n  stderr:\n{}\n  stdout (tail):\n{}",
                    shown(&file),
                    command.line,
                    command.exit,
                    command.text,
                    stderr,
                    tail(&stdout, 10),
                ));
            }
        }
    }
    assert!(ran >= 10, "only {ran} runnable commands found: is the ```sh runnable marking still read?");
    assert!(
        failures.is_empty(),
        "{} of {ran} documented commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A Markdown file with its fenced blocks blanked (the lines kept, so line numbers stay).
fn outside_fences(text: &str) -> String {
    let mut kept = Vec::new();
    let mut open: Option<usize> = None;
    for line in text.lines() {
        match (open, fence(line)) {
            (None, Some((ticks, _))) => {
                open = Some(ticks);
                kept.push("");
            }
            (Some(ticks), Some((closing, ""))) if closing >= ticks => {
                open = None;
                kept.push("");
            }
            (Some(_), _) => kept.push(""),
            (None, None) => kept.push(line),
        }
    }
    kept.join("\n")
}

/// The prose of a Markdown file: fenced blocks blanked and inline code spans removed.
fn prose(text: &str) -> String {
    let joined = outside_fences(text);
    // A code span opens with a run of backticks and closes with a run of the same length.
    let chars: Vec<char> = joined.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let other = chars[j..].iter().take_while(|&&c| c == '`').count();
                if other == run {
                    close = Some(j + other);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                // Keep the span's newlines so line numbers stay right.
                out.extend(chars[i..end].iter().filter(|&&c| c == '\n'));
                i = end;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(file: &Path) -> Vec<String> {
    let text = fs::read_to_string(file).unwrap();
    outside_fences(&text)
        .lines()
        .filter_map(|line| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            (1..=6).contains(&hashes).then(|| line[hashes..].strip_prefix(' ')).flatten()
        })
        .map(|heading| slug(&heading.replace('`', "")))
        .collect()
}

/// Every `[text](target)` in the prose: the target and the line it is on.
fn links(text: &str) -> Vec<(usize, String)> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    let mut offset = 0;
    while let Some(at) = rest.find("](") {
        let start = at + 2;
        let Some(len) = rest[start..].find(')') else { break };
        let target = rest[start..start + len].split_whitespace().next().unwrap_or("").to_string();
        let line = prose[..offset + at].matches('\n').count() + 1;
        found.push((line, target));
        offset += start + len;
        rest = &rest[start + len..];
    }
    found
}

#[test]
fn every_relative_link_points_at_a_file_that_exists() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = fs::read_to_string(&file).unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            if !resolved.exists() {
                broken.push(format!("{}:{line}: `{target}`: no file {}", shown(&file), resolved.display()));
            } else if !anchor.is_empty()
                && resolved.extension().is_some_and(|ext| ext == "md")
                && !anchors(&resolved).iter().any(|a| a == anchor)
            {
                broken.push(format!(
                    "{}:{line}: `{target}`: no heading #{anchor} in {}",
                    shown(&file),
                    shown(&resolved)
                ));
            }
        }
    }
    assert!(checked >= 20, "only {checked} relative links found: is the link reader still working?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; the reference belongs in docs/ (at most {README_MAX_LINES})"
    );
    assert!(readme.starts_with("# tunebench\n\n```sh\ncargo run --release "), "README.md opens with the two commands");
}

#[test]
fn the_block_reader_joins_continued_lines_and_reads_promised_exits() {
    let text = "```sh runnable\n# a comment\ntunebench a \\\n  b   # exits 1\necho 'x\ny' | tunebench c\n\n```\n```sh\ntunebench not-runnable\n```\n";
    let commands = runnable_commands(Path::new("x.md"), text);
    let seen: Vec<(usize, &str, i32)> = commands.iter().map(|c| (c.line, c.text.as_str(), c.exit)).collect();
    assert_eq!(seen, [(3, "tunebench a \\\n  b   # exits 1", 1), (5, "echo 'x\ny' | tunebench c", 0)]);
    assert_eq!(links("[a](b.md) `[c](d.md)` [e\nf](g.md#h)"), [(1, "b.md".to_string()), (2, "g.md#h".to_string())]);
    assert_eq!(slug("compare: json vs jsonl side by side"), "compare-json-vs-jsonl-side-by-side");
}
