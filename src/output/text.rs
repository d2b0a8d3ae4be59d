//! The `text` response type: the answer passed through verbatim, as TrustGraph's `invoke` returns it.

use super::{OutputParser, Profile, Report, ResponseType, TextReport};

/// Collects a `text` answer fed chunk by chunk; every profile passes it through unchanged.
#[derive(Clone, Debug)]
pub struct TextParser {
    profile: Profile,
    text: String,
}

impl TextParser {
    pub fn new(profile: Profile) -> TextParser {
        TextParser { profile, text: String::new() }
    }

    /// The answer so far, exactly as fed.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl OutputParser for TextParser {
    fn feed(&mut self, chunk: &str) {
        self.text.push_str(chunk);
    }

    fn report(&self) -> Report {
        Report::Text(TextReport { response_type: ResponseType::Text, profile: self.profile, text: self.text.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_the_answer_through_verbatim_whatever_the_split() {
        let answer = "  Hello 世界! 🌍\r\n```json\n{\"a\": 1}\n```\n\u{feff}\u{0}";
        for profile in [Profile::Lenient, Profile::Strict, Profile::Trustgraph, Profile::Ptc] {
            let mut parser = TextParser::new(profile);
            for piece in answer.split_inclusive(['\n', ' ']) {
                parser.feed(piece);
            }
            let Report::Text(report) = parser.report() else { panic!("a text report") };
            assert_eq!((report.text.as_str(), report.profile), (answer, profile));
            assert_eq!(report.response_type, ResponseType::Text);
        }
    }

    #[test]
    fn empty_answer_is_empty_text() {
        let Report::Text(report) = TextParser::new(Profile::Lenient).report() else { panic!("a text report") };
        assert_eq!(report.text, "");
    }
}
