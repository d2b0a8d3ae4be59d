//! The limits a run holds on its own side, whatever the server does: a total deadline, an answer-size
//! cap, and `max_tokens` counted by us (o200k, with a margin for tokenizer differences), so a server
//! that streams forever, ignores `max_tokens` or trickles one byte at a time cannot hold a run or its
//! memory without bound; and for a jsonl answer, `max_items` and the repeated-lines guard
//! (`max_repeats`, see [`super::repeats`]), so a list that runs away stops at a record's end. What
//! stopped a run is a [`Stop`].

use std::time::Duration;

use crate::truncate::tokens::count_o200k;

/// A run's total time when none is given (as long as the OpenAI client libraries wait by default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The largest answer (bytes of text, per turn) a run keeps reading when none is given.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 16 * 1024 * 1024;
/// A jsonl answer stops at this many repeated lines in a row when nothing else is given.
pub const DEFAULT_MAX_REPEATS: u32 = 2;

/// Why a run stopped before its answer ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The user cancelled it (a key in the workbench).
    User,
    /// A signal (ctrl-c: `SIGINT`; `SIGTERM`) reached the command.
    Signal(&'static str),
    /// The run's total deadline passed.
    Deadline(Duration),
}

impl Stop {
    /// The warning a cancelled record carries.
    pub fn warning(&self) -> String {
        let tail = "the answer stops where the stream was stopped";
        match self {
            Stop::User => format!("cancelled by the user: {tail}"),
            Stop::Signal(name) => format!("cancelled by {name}: {tail}"),
            Stop::Deadline(after) => format!(
                "cancelled: the run passed its deadline of {} (--timeout, or timeout in the prompt's [provider]): {tail}",
                seconds(*after)
            ),
        }
    }
}

/// `600 s`, `1.5 s`.
fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs} s")
    }
}

/// The client-side limits of one run (written as `{"timeout_s", "max_answer_bytes", "max_items",
/// "max_repeats"}`; the last two read as their defaults when missing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "LimitsText", into = "LimitsText")]
pub struct Limits {
    /// The whole run, every turn and retry wait included.
    pub timeout: Duration,
    /// Bytes of answer text read per turn before the client stops the stream.
    pub max_answer_bytes: u64,
    /// A jsonl answer is stopped once it holds this many items (repeated lines not counted).
    pub max_items: Option<u32>,
    /// A jsonl answer is stopped at this many repeated lines in a row; 0: never (repeats are still
    /// reported and not counted as items).
    pub max_repeats: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_items: None,
            max_repeats: DEFAULT_MAX_REPEATS,
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct LimitsText {
    timeout_s: f64,
    max_answer_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_items: Option<u32>,
    #[serde(default = "default_max_repeats")]
    max_repeats: u32,
}

fn default_max_repeats() -> u32 {
    DEFAULT_MAX_REPEATS
}

impl From<LimitsText> for Limits {
    fn from(text: LimitsText) -> Self {
        let timeout = Duration::try_from_secs_f64(text.timeout_s).ok().filter(|t| !t.is_zero());
        Self {
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            max_answer_bytes: text.max_answer_bytes.max(1),
            max_items: text.max_items.filter(|n| *n > 0),
            max_repeats: text.max_repeats,
        }
    }
}

impl From<Limits> for LimitsText {
    fn from(limits: Limits) -> Self {
        Self {
            timeout_s: limits.timeout.as_secs_f64(),
            max_answer_bytes: limits.max_answer_bytes,
            max_items: limits.max_items,
            max_repeats: limits.max_repeats,
        }
    }
}

/// Counts an answer's tokens as it streams and says when it passes what was asked for.
///
/// Servers count with their model's tokenizer, we with o200k (one of the most compact BPEs, so it
/// counts no more tokens than most models' tokenizers); the answer is stopped only past
/// `max_tokens + max_tokens / 4 + 16`. Text is counted in pieces that end before whitespace (where
/// o200k's pre-tokenizer splits anyway), so the count is close to a count of the whole answer at a
/// cost linear in its length. A token is at least one byte, so an answer of no more bytes than are
/// allowed tokens cannot have passed the limit: nothing is counted (and o200k's tables, tens of MB,
/// are not built) until the answer has more bytes than that.
#[derive(Clone, Debug)]
pub struct TokenGuard {
    max_tokens: Option<u32>,
    allowed: u64,
    counted: u64,
    /// Bytes of the answer so far.
    bytes: u64,
    pending: String,
}

/// Text is counted at the latest when this much has no whitespace in it.
const MAX_PENDING: usize = 1024;

impl TokenGuard {
    pub fn new(max_tokens: Option<u32>) -> Self {
        let allowed = max_tokens.map_or(u64::MAX, |max| u64::from(max) + u64::from(max) / 4 + 16);
        Self { max_tokens, allowed, counted: 0, bytes: 0, pending: String::new() }
    }

    /// Adds a piece of the answer; `Some(message)` once the answer has passed the limit.
    pub fn add(&mut self, text: &str) -> Option<String> {
        let max_tokens = self.max_tokens?;
        self.pending.push_str(text);
        let before = self.bytes;
        self.bytes += text.len() as u64;
        if self.bytes <= self.allowed {
            return None;
        }
        if before <= self.allowed {
            // The first piece counted may be long and without whitespace: counted in pieces of about 1 KiB.
            let split = self.pending.rfind(char::is_whitespace).filter(|at| *at > 0).unwrap_or(self.pending.len());
            self.counted += super::feedback::tokens(self.pending.get(..split).unwrap_or_default());
            self.pending.drain(..split);
            return self.over(max_tokens);
        }
        let split = match self.pending.rfind(char::is_whitespace) {
            Some(at) if at > 0 => at,
            _ if self.pending.len() >= MAX_PENDING => self.pending.len(),
            _ => return None,
        };
        self.counted += count_o200k(self.pending.get(..split).unwrap_or_default()) as u64;
        self.pending.drain(..split);
        self.over(max_tokens)
    }

    /// The message once the count has passed what is allowed.
    fn over(&self, max_tokens: u32) -> Option<String> {
        (self.counted > self.allowed).then(|| {
            format!(
                "cut off by the client: the answer passed max_tokens {max_tokens} ({} tokens counted with o200k, \
                 {} allowed for tokenizer differences); the server did not stop it",
                self.counted, self.allowed
            )
        })
    }
}

/// The message for a jsonl answer stopped at its `limit`-th item.
pub fn enough_items(limit: u32) -> String {
    format!(
        "stopped by the client: the answer reached max_items {limit} (--max-items, or max_items in the prompt's \
         [provider])"
    )
}

/// The message for an answer that grew past `limit` bytes.
pub fn answer_too_large(limit: u64) -> String {
    format!(
        "cut off by the client: the answer passed {limit} bytes (--max-answer-bytes, or max_answer_bytes in the \
         prompt's [provider])"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_max_tokens_never_stops() {
        let mut guard = TokenGuard::new(None);
        assert_eq!(guard.add(&"word ".repeat(10_000)), None);
    }

    #[test]
    fn an_answer_within_the_margin_is_kept_and_one_past_it_is_stopped() {
        // max_tokens 10 allows 10 + 2 + 16 = 28 tokens: " word" is one o200k token each.
        let mut guard = TokenGuard::new(Some(10));
        let mut stopped_at = None;
        for n in 1..=40 {
            if let Some(message) = guard.add(" word") {
                assert!(message.contains("max_tokens 10") && message.contains("28 allowed"), "{message}");
                stopped_at = Some(n);
                break;
            }
        }
        // Counted a piece behind (the open word is not counted until whitespace follows it).
        assert_eq!(stopped_at, Some(30));
    }

    #[test]
    fn an_answer_of_fewer_bytes_than_allowed_tokens_is_not_counted() {
        // max_tokens 512 allows 656 tokens; a token is at least a byte, so 600 bytes cannot pass it and
        // the tokenizer is not asked.
        let mut guard = TokenGuard::new(Some(512));
        for _ in 0..120 {
            assert_eq!(guard.add("word "), None);
        }
        assert_eq!((guard.counted, guard.bytes), (0, 600));
        // Past 656 bytes it counts what it held, then goes on as before.
        assert_eq!(guard.add(&" word".repeat(20)), None);
        assert!(guard.counted >= 120, "{}", guard.counted);
        let stopped = (0..1000).find_map(|_| guard.add(" word"));
        assert!(stopped.as_deref().is_some_and(|m| m.contains("656 allowed")), "{stopped:?}");
    }

    #[test]
    fn text_with_no_whitespace_is_counted_in_bounded_pieces() {
        let mut guard = TokenGuard::new(Some(10));
        let stopped = (0..100).find_map(|_| guard.add(&"x".repeat(100)));
        assert!(stopped.is_some());
        assert!(guard.pending.len() < MAX_PENDING + 100);
    }

    #[test]
    fn stops_say_what_stopped_them() {
        assert!(Stop::Deadline(Duration::from_millis(1500)).warning().contains("deadline of 1.5 s"));
        assert!(Stop::Deadline(Duration::from_secs(600)).warning().contains("deadline of 600 s"));
        assert!(Stop::Signal("SIGINT").warning().starts_with("cancelled by SIGINT"));
        assert!(Stop::User.warning().starts_with("cancelled by the user"));
    }
}
