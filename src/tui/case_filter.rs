//! The case filter typed after `/` in the variables pane, read: words of a case's name (any case) and
//! `is:` a verdict of the last eval, in the eval screen's words (`is:failing`) or as a record writes
//! one (`is:fail`); a word that is no verdict is an error quoting it.

use crate::eval::score::Verdict;
use crate::tui::eval::state::Verdicts;

/// The verdict a case filter asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WantedVerdict {
    /// A kind the eval screen's `v` shows: `is:failing`, `is:passing`, `is:changed`.
    Kind(Verdicts),
    /// One verdict as an eval record writes it: `is:pass`, `is:fail`, `is:truncated`, `is:error`.
    Exactly(Verdict),
}

/// The case filter: what was typed, read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CaseFilter {
    /// As typed (shown in the pane's title).
    pub text: String,
    /// The words of the name, lowercased and joined by one space (empty: any name).
    pub name: String,
    pub verdict: Option<WantedVerdict>,
}

/// The verdict words after `is:`, as the error lists them.
const VERDICT_WORDS: &str = "failing, passing, changed (the eval screen's v), pass, fail, truncated, error";

impl CaseFilter {
    /// Reads a typed filter: `is:WORD` asks for a verdict of the last eval, the other words are a part
    /// of the case's name (any case). The error quotes the word that is not a verdict.
    pub fn parse(text: &str) -> Result<CaseFilter, String> {
        let mut name = Vec::new();
        let mut verdict = None;
        for word in text.split_whitespace() {
            let Some(asked) = word.strip_prefix("is:") else {
                name.push(word.to_lowercase());
                continue;
            };
            let wanted = match Verdicts::from_word(asked) {
                Some(Verdicts::All) => None,
                Some(kind) => Some(WantedVerdict::Kind(kind)),
                None => Some(WantedVerdict::Exactly(exact_verdict(asked).ok_or_else(|| {
                    format!("{word:?} is not a verdict: is: takes {VERDICT_WORDS} (esc clears the filter)")
                })?)),
            };
            if let (Some(before), Some(now)) = (verdict, wanted) {
                if before != now {
                    return Err(format!("{word:?} asks for a second verdict: a case has one (esc clears the filter)"));
                }
            }
            verdict = wanted.or(verdict);
        }
        Ok(CaseFilter { text: text.trim().to_string(), name: name.join(" "), verdict })
    }

    /// Whether any case is filtered out.
    pub fn is_on(&self) -> bool {
        !self.name.is_empty() || self.verdict.is_some()
    }
}

/// A verdict as the eval record spells it.
fn exact_verdict(word: &str) -> Option<Verdict> {
    match word {
        "pass" => Some(Verdict::Pass),
        "fail" => Some(Verdict::Fail),
        "truncated" => Some(Verdict::Truncated),
        "error" => Some(Verdict::Error),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_reads_name_words_and_one_verdict_in_the_eval_screens_words() {
        let filter = CaseFilter::parse("  Invoice  is:failing LINE ").unwrap();
        assert_eq!(filter.name, "invoice line");
        assert_eq!(filter.verdict, Some(WantedVerdict::Kind(Verdicts::Failing)));
        assert_eq!(CaseFilter::parse("is:error").unwrap().verdict, Some(WantedVerdict::Exactly(Verdict::Error)));
        assert!(!CaseFilter::parse("is:all").unwrap().is_on());
        let error = CaseFilter::parse("is:broken").unwrap_err();
        assert!(error.contains("\"is:broken\" is not a verdict") && error.contains("failing"), "{error}");
        let error = CaseFilter::parse("is:pass is:fail").unwrap_err();
        assert!(error.contains("\"is:fail\" asks for a second verdict"), "{error}");
    }
}
