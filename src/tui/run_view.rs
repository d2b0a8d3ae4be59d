//! What the editing screen shows of the run: the answer as it streams ([`RunView`]), how sure the
//! model was of each chunk, the lines' verdict counts, and the truncation view of the answer.

use crate::output::{LineStatus, LineVerdict, Report};
use crate::provider::kind::ProviderKind;
use crate::provider::{FinishReason, ModeReport, TokenProb, Usage};
use crate::truncate::sweep::Sweep;

/// The answer as it streams, and what is known of the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunView {
    pub output: String,
    /// The model's thought before the answer, as generated (thinking mode; shown apart, dim).
    pub thinking: String,
    /// The tokens of the thought.
    pub thinking_tokens: u32,
    /// Byte offsets where each chunk ended (token boundaries).
    pub chunk_ends: Vec<usize>,
    /// How sure the model was of each chunk (index as `chunk_ends`), when the provider said.
    pub chunk_probs: Vec<Option<ChunkProb>>,
    /// Byte offsets where each line of the output starts.
    pub line_starts: Vec<usize>,
    /// JSONL verdicts of the current turn, as they arrive.
    pub verdicts: Vec<LineVerdict>,
    pub turn: u32,
    pub max_turns: u32,
    /// The turn's time to first token, from the run's summary (the core measures it; `None` until
    /// the turn ends).
    pub ttft_ms: Option<u64>,
    /// When the turn's first chunk arrived (milliseconds since the run started): where the
    /// sparkline's buckets begin.
    pub first_chunk_ms: Option<u64>,
    /// Milliseconds since the start of the last event.
    pub last_at_ms: u64,
    pub usage: Option<Usage>,
    pub finish: Option<FinishReason>,
    /// The turn's generation speed, from the run's summary (`None` until the turn ends).
    pub tokens_per_s: Option<f64>,
    /// Chunks per 100 ms bucket since the first token (the sparkline).
    pub rate: Vec<u64>,
    /// The final report of the last turn (json answers show their verdict from it).
    pub report: Option<Report>,
    pub error: Option<String>,
    /// The run's answer scored against its case's expected answer and checks, once it ended (`Err`:
    /// why it could not be; `None`: no case, nothing expected, or not ended).
    pub scored: Option<Result<Box<crate::eval::score::CaseScore>, String>>,
    /// The provider and model as the run reported them (`None`: no run yet).
    pub provider: Option<ProviderKind>,
    pub model: String,
    /// The structured mode as the run reported it (asked, used, each fallback with its reason).
    pub mode: Option<ModeReport>,
    /// The structured mode the run asked for (`none` when it named none).
    pub asked_mode: String,
    /// The workbench chose the asked mode itself (`constrained` on the local model).
    pub mode_by_default: bool,
}

impl RunView {
    /// A fresh view for a new turn (figures of the run kept).
    pub fn clear_answer(&mut self) {
        self.output.clear();
        self.thinking.clear();
        self.thinking_tokens = 0;
        self.chunk_ends.clear();
        self.chunk_probs.clear();
        self.line_starts = vec![0];
        self.verdicts.clear();
        self.ttft_ms = None;
        self.first_chunk_ms = None;
        self.usage = None;
        self.finish = None;
        self.tokens_per_s = None;
        self.rate.clear();
        self.report = None;
        self.error = None;
        self.scored = None;
    }

    /// Appends a chunk: the text, its end, where new lines start.
    pub fn push_chunk(&mut self, text: &str) {
        let start = self.output.len();
        self.output.push_str(text);
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                self.line_starts.push(start + i + 1);
            }
        }
        self.chunk_ends.push(self.output.len());
        self.chunk_probs.push(None);
    }

    /// The probabilities of the last chunk's tokens (added to what it had).
    pub fn push_probs(&mut self, probs: &[TokenProb]) {
        self.chunk_probs.resize(self.chunk_ends.len(), None);
        if let Some(last) = self.chunk_probs.last_mut() {
            *last = ChunkProb::of(probs, *last);
        }
    }

    /// How many lines the output has (a trailing partial line counts).
    pub fn line_count(&self) -> usize {
        self.line_starts.len().max(1)
    }

    /// The text of 0-based line `index`, without its newline.
    pub fn line(&self, index: usize) -> &str {
        let Some(&start) = self.line_starts.get(index) else { return "" };
        let end = self.line_starts.get(index + 1).map_or(self.output.len(), |&next| next - 1);
        self.output.get(start..end.max(start)).unwrap_or_default()
    }
}

/// How sure the model was of one chunk: its least likely chosen token, or forced when the grammar
/// inserted every token of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChunkProb {
    /// The lowest probability among the chunk's chosen tokens (`None`: all were forced).
    pub p: Option<f32>,
    /// Every token of the chunk was forced by the grammar.
    pub forced: bool,
}

impl ChunkProb {
    /// `before` with `probs` added; `None` when neither says anything.
    pub fn of(probs: &[TokenProb], before: Option<ChunkProb>) -> Option<ChunkProb> {
        probs.iter().fold(before, |acc, prob| {
            let p = match (acc.and_then(|a| a.p), prob.p) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            Some(ChunkProb { p, forced: acc.is_none_or(|a| a.forced) && prob.forced })
        })
    }
}

/// The verdict counts shown in the lines pane title.
pub fn counts(verdicts: &[LineVerdict]) -> [usize; 4] {
    let mut counts = [0; 4];
    for verdict in verdicts {
        let at = match verdict.status {
            LineStatus::Valid { .. } => 0,
            LineStatus::InvalidJson { .. } => 1,
            LineStatus::SchemaError { .. } => 2,
            LineStatus::Skipped { .. } => 3,
        };
        counts[at] += 1;
    }
    counts
}

/// The truncation view: the cut (in chunks) and the sweep of the answer. While the answer streams the
/// run's own sweep sends the items at each cut that changes them (`steps`, `series` grow by appending);
/// the whole sweep (corrupt resolved) arrives when the turn ends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TruncationView {
    /// Chunks kept (0 ..= chunk count).
    pub cut: usize,
    pub sweep: Option<Sweep>,
    /// A sweep is being computed.
    pub pending: bool,
    /// The answer length (bytes) the last sweep asked for covers.
    pub requested_len: usize,
    /// The answer length the shown sweep covers.
    pub swept_len: usize,
    /// The figures shown are the answer so far's live items (no sweep of the whole answer yet).
    pub live: bool,
    /// While live: the items of json, json-repair and jsonl as `(cut, items)` at each cut where they
    /// change (cut 0 holds none).
    pub steps: [Vec<(usize, usize)>; 3],
    /// Live figure events received (a bench figure).
    pub live_cuts: usize,
    pub error: Option<String>,
    /// The chart's step lines (cut, items) of json, json-repair and jsonl: made once per sweep, and
    /// while live appended to (the last point is the answer's end).
    pub series: [Vec<(f64, f64)>; 3],
    /// Bytes of answer the sweeps shown so far read (a bench figure: the sweep's work).
    pub swept_bytes: usize,
}

impl TruncationView {
    /// While live: the items of the `at`-th strategy of the pane's order at `cut`.
    pub fn live_items(&self, at: usize, cut: usize) -> usize {
        let steps = self.steps.get(at).map(Vec::as_slice).unwrap_or_default();
        let before = steps.partition_point(|&(first, _)| first <= cut);
        before.checked_sub(1).and_then(|at| steps.get(at)).map_or(0, |&(_, items)| items)
    }
}
