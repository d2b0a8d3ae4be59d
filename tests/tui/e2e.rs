//! The real binary in a pseudo-terminal (portable-pty), the screen read back with a vt100 parser:
//! type into the template, run the recorded answer, read the verdicts and the truncation chart,
//! save, quit cleanly, and find the edit in the file.

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
    let prompt = copy_sample(dir);
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
