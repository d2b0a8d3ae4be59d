//! The thinking mode of a model whose chat template has one (Qwen3): what the model thought before
//! its answer ([`Thought`]), how the thinking ended ([`ThoughtEnd`]), and the text the engine writes
//! to close it when the budget is spent ([`BUDGET_CLOSE`], as llama.cpp's and vLLM's budget forcing
//! do). The thought is shown apart from the answer and never parsed as it.

/// A token's id in the model's vocabulary.
type TokenId = u32;

/// The thinking budget when the prompt or the command line asks for thinking without one
/// (`thinking = true`, `--think`).
pub const DEFAULT_THINKING_BUDGET: u32 = 512;

/// Written by the engine after the last thinking token when the budget is spent.
pub const BUDGET_CLOSE: &str = "\n</think>\n\n";
/// Written by the engine after the model's own `</think>`: the answer then starts where a template
/// with thinking off starts it (after `</think>\n\n`).
pub const MODEL_CLOSE: &str = "\n\n";
/// The tags around a thought, as Qwen3 writes them.
const OPEN_TAG: &str = "<think>";
const CLOSE_TAG: &str = "</think>";

/// How the thinking ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThoughtEnd {
    /// The model wrote `</think>` itself.
    Model,
    /// The budget was spent (or the model ended its turn while thinking): the engine closed it.
    Budget,
}

/// What the model thought before its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thought {
    /// The tokens the model generated while thinking (at most the budget).
    pub tokens: Vec<TokenId>,
    /// Their text, as generated (tags included).
    pub raw: String,
    /// The tokens the engine wrote to close the thought ([`BUDGET_CLOSE`] or [`MODEL_CLOSE`]).
    pub closing: Vec<TokenId>,
    pub end: ThoughtEnd,
}

impl Thought {
    /// The thought's text without its `<think>` and `</think>` tags and the blank lines around them.
    pub fn text(&self) -> String {
        shown(&self.raw)
    }

    /// Whether the model closed its thought itself (its text ends with `</think>`).
    pub fn closed_by_model(raw: &str) -> bool {
        raw.trim_end().ends_with(CLOSE_TAG)
    }
}

/// `raw` without a leading `<think>`, a trailing `</think>` and the newlines around them.
pub fn shown(raw: &str) -> String {
    let text = raw.trim_start();
    let text = text.strip_prefix(OPEN_TAG).unwrap_or(text);
    let text = text.trim_end();
    let text = text.strip_suffix(CLOSE_TAG).unwrap_or(text);
    text.trim_matches('\n').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_thought_has_no_tags() {
        assert_eq!(shown("<think>\nthe date is in the text\n</think>"), "the date is in the text");
        assert_eq!(shown("half a tho"), "half a tho");
        assert_eq!(shown("<think>\n  indented\nlines"), "  indented\nlines");
        assert!(Thought::closed_by_model("<think>x</think>"));
        assert!(!Thought::closed_by_model("<think>x</thi"));
    }
}
