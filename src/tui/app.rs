//! The loop: messages in (terminal input from a reader thread, run events, background results),
//! drained in batches through `update`, effects handed to the [`Runner`], and a render at most every
//! [`FRAME`] — never once per token. The terminal side (raw mode, mouse, panic hook) lives here too.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use ratatui::backend::Backend;
use ratatui::Terminal;

use crate::tui::msg::{Effect, Msg};
use crate::tui::runner::Runner;
use crate::tui::state::State;
use crate::tui::theme::Theme;
use crate::tui::update::update;

/// The shortest time between two renders (about 60 frames per second at most).
pub const FRAME: Duration = Duration::from_millis(16);
/// The longest a batch of messages is drained before the screen gets a chance to render.
pub const BATCH: Duration = Duration::from_millis(8);
/// How often a tick reaches `update` when nothing else happens.
pub const TICK: Duration = Duration::from_millis(250);

/// The workbench: its state, looks, message queue and the executor of its effects.
pub struct App {
    pub state: State,
    pub theme: Theme,
    pub rx: Receiver<Msg>,
    pub runner: Runner,
    pub started: Instant,
    pub stats: LoopStats,
}

/// What the loop counts (the `tui` bench reads it).
#[derive(Clone, Debug, Default)]
pub struct LoopStats {
    pub renders: usize,
    pub first_frame: Option<Instant>,
    pub render_times: Vec<Instant>,
    /// When each key message was handled by `update`.
    pub keys_handled: Vec<Instant>,
    pub messages: usize,
    /// The longest one message took (`update` and its effects handed to the runner).
    pub longest_message: Duration,
}

impl App {
    /// Applies `msg` and every message its effects give back at once.
    pub fn handle(&mut self, msg: Msg) {
        let mut queue = vec![msg];
        while let Some(msg) = queue.pop() {
            self.stats.messages += 1;
            if matches!(msg, Msg::Term(crate::tui::msg::TermEvent::Key(_))) {
                self.stats.keys_handled.push(Instant::now());
            }
            let started = Instant::now();
            for effect in update(&mut self.state, msg) {
                if effect == Effect::Quit {
                    self.state.quit = true;
                }
                queue.extend(self.runner.execute(effect));
            }
            self.stats.longest_message = self.stats.longest_message.max(started.elapsed());
        }
    }

    /// Runs until the state asks to quit or every sender is gone; `until` can stop it earlier
    /// (the bench stops when its run is swept).
    pub fn run<B: Backend>(
        &mut self,
        terminal: &mut Terminal<B>,
        mut until: impl FnMut(&State) -> bool,
    ) -> anyhow::Result<()>
    where
        B::Error: Send + Sync + 'static,
    {
        let mut last_render: Option<Instant> = None;
        let mut last_tick = Instant::now();
        let mut dirty = true;
        loop {
            if dirty && last_render.is_none_or(|t| t.elapsed() >= FRAME) {
                terminal.draw(|frame| crate::tui::view::render(frame, &self.state, &self.theme))?;
                let now = Instant::now();
                last_render = Some(now);
                self.stats.renders += 1;
                self.stats.render_times.push(now);
                self.stats.first_frame.get_or_insert(now);
                dirty = false;
            }
            if self.state.quit || until(&self.state) {
                return Ok(());
            }
            let wait = if dirty {
                FRAME.saturating_sub(last_render.map_or(Duration::ZERO, |t| t.elapsed()))
            } else {
                TICK.saturating_sub(last_tick.elapsed())
            };
            match self.rx.recv_timeout(wait) {
                Ok(msg) => {
                    self.handle(msg);
                    dirty = true;
                    let batch = Instant::now();
                    while batch.elapsed() < BATCH {
                        match self.rx.try_recv() {
                            Ok(msg) => self.handle(msg),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                let note = self.state.note.clone();
                self.handle(Msg::Tick { now_ms: self.started.elapsed().as_millis() as u64 });
                dirty |= self.state.note != note;
            }
        }
    }
}
