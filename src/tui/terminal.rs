//! The real terminal: raw mode and the alternate screen (ratatui's init, whose panic hook restores
//! the terminal before the panic is printed), mouse and bracketed paste, the input reader thread, and
//! the restore on every way out.

use std::io::stdout;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::Sender;

use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event, KeyEventKind,
    MouseButton, MouseEventKind,
};
use crossterm::execute;
use ratatui_textarea::Input;

use crate::tui::msg::{Mouse, MouseKind, Msg, TermEvent};
use crate::tui::setup::{build, Options};
use crate::tui::{paths, sample};

/// Opens the workbench on `prompt` (the sample when `None`, run at once) until the user quits.
pub fn start(prompt: Option<PathBuf>, no_fetch: bool) -> anyhow::Result<ExitCode> {
    let run_now = prompt.is_none();
    let path = match prompt {
        Some(path) => path,
        None => sample::ensure(&paths::data_dir().map_err(anyhow::Error::msg)?).map_err(anyhow::Error::msg)?,
    };
    let (mut app, tx) = build(&path, Options { run_now, no_fetch, warm_model: true, ..Options::default() })?;
    app.runner.clipboard = true;
    let mut terminal = ratatui::init();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(stdout(), DisableMouseCapture, DisableBracketedPaste);
        ratatui::restore();
        previous(info);
    }));
    let _ = execute!(stdout(), EnableMouseCapture, EnableBracketedPaste);
    if let Ok(size) = terminal.size() {
        app.state.size = (size.width, size.height);
    }
    spawn_reader(tx);
    let result = app.run(&mut terminal, |_| false);
    let _ = execute!(stdout(), DisableMouseCapture, DisableBracketedPaste);
    ratatui::restore();
    result?;
    Ok(ExitCode::SUCCESS)
}

/// Reads terminal events on a thread of its own and sends them to the loop.
fn spawn_reader(tx: Sender<Msg>) {
    std::thread::spawn(move || loop {
        let Ok(event) = event::read() else { return };
        let msg = match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => TermEvent::Key(Input::from(key)),
            Event::Mouse(mouse) => {
                let kind = match mouse.kind {
                    MouseEventKind::Down(MouseButton::Left) => MouseKind::Click,
                    MouseEventKind::Drag(MouseButton::Left) => MouseKind::Drag,
                    MouseEventKind::ScrollDown => MouseKind::ScrollDown,
                    MouseEventKind::ScrollUp => MouseKind::ScrollUp,
                    _ => continue,
                };
                TermEvent::Mouse(Mouse { kind, column: mouse.column, row: mouse.row })
            }
            Event::Resize(columns, rows) => TermEvent::Resize(columns, rows),
            Event::Paste(text) => TermEvent::Paste(text),
            _ => continue,
        };
        if tx.send(Msg::Term(msg)).is_err() {
            return;
        }
    });
}
