//! The real binary in a pseudo-terminal (portable-pty), the screen read back with a vt100 parser:
//! type into the template, run the recorded answer, read the verdicts and the truncation chart,
//! save, quit cleanly, and find the edit in the file; open the eval screen on a prompt with cases,
//! run it on the replay provider, approve a failing case's answer and see its cell pass.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{native_pty_system, CommandBuilder, PtySize};

struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Screen {
    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Waits until `pred` holds for the screen text (panics with the screen after 20 s).
    fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if pred(&text) {
                return text;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for {what}; the screen:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn copy_sample(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("answers")).unwrap();
    std::fs::copy(super::support::SAMPLE, dir.join("agent-kg-extract.toml")).unwrap();
    std::fs::copy(super::support::SAMPLE_ANSWER, dir.join("answers/agent-kg-extract.jsonl")).unwrap();
    dir.join("agent-kg-extract.toml")
}

type Child = Box<dyn portable_pty::Child + Send + Sync>;

/// The workbench on a copy of the sample in a 120×40 pseudo-terminal, replaying at `speed`: the
/// child, its screen, its keyboard, the prompt file.
fn spawn(dir: &Path, speed: &str) -> (Child, Screen, Box<dyn Write + Send>, std::path::PathBuf) {
    spawn_on(dir, copy_sample(dir), speed)
}

/// The workbench on `prompt` (in `dir`), as [`spawn`].
fn spawn_on(
    dir: &Path,
    prompt: std::path::PathBuf,
    speed: &str,
) -> (Child, Screen, Box<dyn Write + Send>, std::path::PathBuf) {
    let pty = native_pty_system();
    let pair = pty.openpty(PtySize { rows: 40, cols: 120, pixel_width: 0, pixel_height: 0 }).unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_tunebench"));
    cmd.arg(&prompt);
    // On the recorded answer, never the local model, and no fetch.
    cmd.arg("--no-fetch");
    cmd.env("TUNEBENCH_CACHE_DIR", dir.join("cache"));
    cmd.cwd(dir);
    cmd.env("TERM", "xterm-256color");
    cmd.env("TUNEBENCH_DATA_DIR", dir.join("data"));
    cmd.env("TUNEBENCH_CONFIG_DIR", dir.join("config"));
    cmd.env("TUNEBENCH_REPLAY_SPEED", speed);
    let child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let writer = pair.master.take_writer().unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(40, 120, 0)));
    let sink = Arc::clone(&parser);
    std::thread::spawn(move || {
        let _master = pair.master;
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().process(&buf[..n]);
        }
    });
    (child, Screen { parser }, writer, prompt)
}

fn wait_exit(child: &mut Child, screen: &Screen) -> portable_pty::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "the workbench did not quit:\n{}", screen.text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The output pane's chunk count, read off its title.
fn chunks_shown(text: &str) -> usize {
    text.split(" output ")
        .nth(1)
        .and_then(|rest| rest.split(" chunks").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn binary_in_a_pty_edits_runs_saves_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, screen, mut writer, prompt) = spawn(dir.path(), "20x");
    let mut send = |bytes: &[u8]| {
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
        std::thread::sleep(Duration::from_millis(30));
    };

    screen.wait("the workbench", |s| s.contains("template") && s.contains("truncation"));
    send(b"Keep it short. ");
    screen.wait("the typed text", |s| s.contains("Keep it short.") && s.contains("unsaved"));
    send(b"\x12"); // ctrl-r: run
    let text = screen.wait("the verdicts and the chart", |s| {
        s.contains("done") && s.contains("skipped") && s.contains("invalid") && s.contains("json-repair")
    });
    assert!(text.contains("✓ valid"), "{text}");
    assert!(text.contains("res 0."), "{text}");
    send(b"\x13"); // ctrl-s: save
    screen.wait("saved", |s| s.contains("saved ") && !s.contains("● unsaved"));
    send(b"\x11"); // ctrl-q: quit
    let status = wait_exit(&mut child, &screen);
    assert!(status.success(), "exit status {status:?}");
    let saved = std::fs::read_to_string(&prompt).unwrap();
    assert!(saved.contains("Keep it short. "), "{saved}");
    let history = std::fs::read_to_string(dir.path().join("data/history.jsonl")).unwrap();
    assert!(history.contains("\"prompt\":\"agent-kg-extract\""), "the run went to the history");
}

#[test]
fn cancel_stops_the_stream_and_keeps_the_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, screen, mut writer, _) = spawn(dir.path(), "recorded");
    let mut send = |bytes: &[u8]| {
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
    };
    screen.wait("the workbench", |s| s.contains("template"));
    send(b"\x12");
    screen.wait("a few chunks", |s| chunks_shown(s) >= 20);
    send(b"\x1b"); // esc: cancel
    let text = screen.wait("cancelled", |s| s.contains("cancelled"));
    let kept = chunks_shown(&text);
    assert!((20..209).contains(&kept), "{text}");
    std::thread::sleep(Duration::from_millis(400));
    let later = screen.text();
    assert_eq!(chunks_shown(&later), kept, "the stream stopped:\n{later}");
    assert!(later.contains("partial answer"), "{later}");
    // The cancelled run went to the history with its partial answer, and replays from there.
    screen.wait("the cancelled run in the history", |s| s.contains("⊘ cancelled"));
    let history = tunebench::run::history::read(&dir.path().join("data/history.jsonl")).unwrap();
    let record = history.records.last().unwrap();
    assert!(record.cancelled, "{record:?}");
    assert_eq!(record.turns[0].chunks, kept, "{record:?}");
    send(b"\x1b8"); // alt-8: the history
    send(b"\r"); // enter: replay the selected (newest) run
    let replayed = screen.wait("the replay", |s| s.contains("done") && chunks_shown(s) == kept);
    assert!(replayed.contains("history"), "{replayed}");
    send(b"\x11");
    assert!(wait_exit(&mut child, &screen).success());
}

#[test]
fn eval_screen_runs_the_cases_and_an_approved_answer_passes() {
    let dir = super::eval::folder();
    let prompt = dir.path().join("definitions.toml");
    let (mut child, screen, mut writer, _) = spawn_on(dir.path(), prompt.clone(), "20x");
    let mut send = |bytes: &[u8]| {
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
        std::thread::sleep(Duration::from_millis(30));
    };
    screen.wait("the workbench", |s| s.contains("template"));
    send(b"\x1be"); // alt-e: the eval screen, run on the replay provider
    let text = screen.wait("the matrix", |s| s.contains("1/2 pass") && s.contains("eval done"));
    assert!(text.contains("alpha") && text.contains("beta") && text.contains("fail"), "{text}");
    send(b"j"); // beta
    send(b"a"); // approve: the confirmation shows the answer
    screen.wait("the confirmation", |s| s.contains("approve as expected: 1 item") && s.contains("The second letter."));
    send(b"y");
    let text = screen.wait("the cell passing", |s| s.contains("2/2 pass (100%)"));
    assert!(!text.contains("fail "), "{text}");
    let saved = std::fs::read_to_string(&prompt).unwrap();
    assert!(!saved.contains("Gamma"), "the approved answer is the expected one now:\n{saved}");
    send(b"\x1b"); // esc: back to editing
    screen.wait("the editors", |s| s.contains("template"));
    send(b"\x11");
    assert!(wait_exit(&mut child, &screen).success());
    let evals = std::fs::read_dir(dir.path().join("data/evals")).unwrap().count();
    assert_eq!(evals, 1, "the eval was recorded in the store");
}
