//! Where a screen's job is (an eval, a comparison, an optimization): not started, running, ended,
//! or failed with the reason shown. One enum for every screen, each naming it in its own words.

/// Where a screen's job is.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum JobPhase {
    /// Not started in this session.
    #[default]
    Idle,
    /// Running: its results stream in (cells fill, sides stream, candidates are scored).
    Running,
    /// It ended (or was stopped) and its result arrived.
    Done,
    /// Nothing ran: the message says why (no saved prompt, a provider that cannot be built, no twin).
    Failed(String),
}
