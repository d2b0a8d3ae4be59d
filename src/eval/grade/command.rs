//! A program that grades an answer (a `command` check, promptfoo's `python` and `javascript`
//! assertions): found before anything runs (in the prompt's folder, never outside it, or on `PATH`),
//! then run as an argument list (never a shell line) in the prompt's folder with the question as JSON
//! on stdin and a clean environment (the locale, `PATH`, `HOME` and the temporary folder: no key, no
//! secret), in a process group of its own, bounded by a timeout and an output cap; the whole group is
//! killed when the grading ends, times out or is dropped (a cancel), and when tunebench is ended by a
//! signal ([`end_every_group`]). Its stdout must be one verdict,
//! `{"pass": bool, "score": 0..1, "reason": "..."}`; anything else is an error naming the check.

use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Graded;

/// A program's most seconds when the check gives none.
pub const DEFAULT_TIMEOUT_S: f64 = 30.0;
/// The most bytes read from a program's stdout (and, for its error message, its stderr).
pub const OUTPUT_CAP: u64 = 1 << 20;
/// The most characters of stderr an error message quotes.
const STDERR_QUOTED: usize = 300;

/// A grading program, found and ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The program's file (resolved) and its arguments as written.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The prompt's folder: the program runs there.
    pub dir: PathBuf,
    pub timeout: Duration,
    /// The program as messages name it (`python3 check.py`).
    pub shown: String,
}

impl Program {
    /// `argv` found from `dir` (the prompt's folder): a program with a `/` is a file inside `dir`, one
    /// without is looked up on `PATH`; an argument that climbs out of `dir` (`../x`) is refused.
    /// `Err` says which part is wrong.
    pub fn find(argv: &[String], dir: &Path, timeout_s: Option<f64>) -> Result<Program, String> {
        let (name, args) = argv.split_first().ok_or("`command` names no program")?;
        for arg in args {
            if climbs_out(arg) {
                return Err(format!("argument {arg:?} reaches outside the prompt's folder {}", dir.display()));
            }
            if names_script(arg) {
                inside(arg, dir).map_err(|why| format!("argument {arg:?}: {why}"))?;
            }
        }
        let program = if name.contains('/') || name.contains(std::path::MAIN_SEPARATOR) {
            inside(name, dir).map_err(|why| format!("program {why}"))?
        } else {
            on_path(name).ok_or_else(|| format!("program {name:?} is not found on PATH"))?
        };
        let timeout = Duration::from_secs_f64(timeout_s.unwrap_or(DEFAULT_TIMEOUT_S));
        let shown = argv.iter().map(|a| crate::eval::values::cut(a, 40)).collect::<Vec<_>>().join(" ");
        Ok(Program { program, args: args.to_vec(), dir: dir.to_path_buf(), timeout, shown })
    }

    /// Runs the program with `input` on stdin; its verdict, or why there is none.
    pub async fn grade(&self, input: &Value) -> Result<Graded, String> {
        let stdout = self.output(input).await?;
        verdict_of(&stdout)
    }

    /// Runs the program with `input` on stdin: its stdout, or why it failed (missing, killed, non-zero
    /// exit with its stderr, past the timeout, too much output).
    pub async fn output(&self, input: &Value) -> Result<String, String> {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        clean_environment(command.as_std_mut());
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| format!("{} could not start: {e}", self.shown))?;
        // Ends the program's whole group (what it started too) however the grading ends.
        let _group = child.id().map(Group::new);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let body = serde_json::to_vec(input).unwrap_or_default();
        let work = async {
            let write = async move {
                if let Some(mut stdin) = stdin {
                    // A program that does not read its stdin closes it: that is not its failure.
                    let _ = stdin.write_all(&body).await;
                    let _ = stdin.shutdown().await;
                }
            };
            let (_, out, err, status) = tokio::join!(write, capped(stdout), capped(stderr), child.wait());
            (out, err, status)
        };
        let (out, err, status) = tokio::time::timeout(self.timeout, work).await.map_err(|_| {
            format!("{} took longer than its timeout of {} s and was stopped", self.shown, self.timeout.as_secs_f64())
        })?;
        let status = status.map_err(|e| format!("{} could not be waited for: {e}", self.shown))?;
        let (out, out_over) = out;
        let (err, _) = err;
        if !status.success() {
            let code =
                status.code().map_or_else(|| "was killed by a signal".to_string(), |c| format!("exited with {c}"));
            let said = String::from_utf8_lossy(&err);
            let tail = last_lines(said.trim(), STDERR_QUOTED);
            let tail = if tail.is_empty() { String::new() } else { format!(": {tail}") };
            return Err(format!("{} {code}{tail}", self.shown));
        }
        if out_over {
            return Err(format!("{} printed more than {OUTPUT_CAP} bytes", self.shown));
        }
        String::from_utf8(out).map_err(|_| format!("{} printed something that is not UTF-8", self.shown))
    }
}

/// The variables a grading program keeps from tunebench's environment: nothing secret.
const KEPT_VARS: [&str; 8] = ["PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TZ", "TERM", "SYSTEMROOT"];

/// `command`'s environment made clean: the locale, `PATH`, `HOME`, the temporary folder, nothing else
/// (no key, no secret of tunebench's environment reaches a grading program).
pub(super) fn clean_environment(command: &mut std::process::Command) {
    command.env_clear();
    for (name, value) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if KEPT_VARS.contains(&name_text.as_ref()) || name_text.starts_with("LC_") {
            command.env(&name, value);
        }
    }
}

/// The end of `text` in at most about `most` characters, starting at a line's beginning (a Python
/// traceback's last lines, never a line cut in its middle, unless its last line alone is longer).
fn last_lines(text: &str, most: usize) -> String {
    let count = text.chars().count();
    if count <= most {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - most).collect();
    match tail.find('\n') {
        Some(at) if at + 1 < tail.len() => tail[at + 1..].to_string(),
        _ => format!("…{tail}"),
    }
}

/// The process groups of the grading programs running now, by their leader's id.
static GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// A grading program's process group, ended when this is dropped.
pub(super) struct Group(u32);

impl Group {
    pub(super) fn new(id: u32) -> Group {
        if let Ok(mut groups) = GROUPS.lock() {
            groups.push(id);
        }
        Group(id)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(mut groups) = GROUPS.lock() {
            groups.retain(|g| *g != self.0);
        }
        kill_group(self.0);
    }
}

#[cfg(unix)]
fn kill_group(id: u32) {
    let Ok(id) = i32::try_from(id) else { return };
    if let Some(pid) = rustix::process::Pid::from_raw(id) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_id: u32) {}

/// Ends every grading program's group now (tunebench is ending on a signal). Never blocks: a lock
/// held elsewhere leaves the groups to their own end.
pub fn end_every_group() {
    if let Ok(groups) = GROUPS.try_lock() {
        for id in groups.iter() {
            kill_group(*id);
        }
    }
}

/// Up to [`OUTPUT_CAP`] bytes of `stream`, and whether it held more (the rest is read and dropped, so
/// the program is never blocked on a full pipe).
async fn capped<R: AsyncRead + Unpin>(stream: Option<R>) -> (Vec<u8>, bool) {
    let Some(mut stream) = stream else { return (Vec::new(), false) };
    let mut kept = Vec::new();
    let mut over = false;
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = (OUTPUT_CAP as usize).saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
                over |= n > room;
            }
        }
    }
    (kept, over)
}

/// The verdict a program printed: one JSON object `{"pass": bool, "score": 0..1, "reason": "..."}`
/// (`score` defaults to 1 for a pass and 0 for a fail; `reason` may be left out).
pub fn verdict_of(stdout: &str) -> Result<Graded, String> {
    let text = stdout.trim();
    let shown = crate::eval::values::cut(text, 120);
    let value: Value = serde_json::from_str(text).map_err(|_| {
        format!("printed {shown:?}, not a verdict: one JSON object {{\"pass\": true|false, \"score\": 0..1, \"reason\": \"...\"}}")
    })?;
    Graded::from_verdict(&value).map_err(|why| format!("printed {shown:?}: {why}"))
}

/// `name` inside `dir`: a file there, not reaching out through `..` or a link.
pub(super) fn inside(name: &str, dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join(name);
    let base = dir.canonicalize().map_err(|e| format!("the prompt's folder {} cannot be read: {e}", dir.display()))?;
    let real = path.canonicalize().map_err(|_| format!("{name:?} is not found in {}", dir.display()))?;
    if !real.starts_with(&base) {
        return Err(format!("{name:?} is outside the prompt's folder {}", dir.display()));
    }
    if !real.is_file() {
        return Err(format!("{name:?} is not a file"));
    }
    Ok(real)
}

/// Whether an argument names a script file (`check.py`, `checks/score.js`): it must be in the folder.
fn names_script(arg: &str) -> bool {
    const SCRIPTS: [&str; 9] = ["py", "js", "mjs", "cjs", "ts", "sh", "rb", "pl", "r"];
    !arg.starts_with('-')
        && !arg.contains(char::is_whitespace)
        && Path::new(arg).extension().is_some_and(|e| SCRIPTS.contains(&e.to_string_lossy().to_lowercase().as_str()))
}

/// Whether a relative path argument climbs out of the folder it is read in (`../x`, `a/../../x`).
fn climbs_out(arg: &str) -> bool {
    let mut depth: i64 = 0;
    for component in Path::new(arg).components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// The executable file `name` in a folder of `PATH`.
pub(super) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| executable(candidate))
}

#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(path: &Path) -> bool {
    path.is_file()
}
