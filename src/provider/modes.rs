//! The structured-output ladder: json-schema → json-object → prompt-based JSON, each step down
//! recorded with its reason so the run record can say which mode was used and why.

use super::{Fallback, ModeReport, Request, StructuredMode};

/// The mode a request is being sent with, and how it got there.
pub(crate) struct Ladder {
    requested: StructuredMode,
    current: StructuredMode,
    has_schema: bool,
    /// A JSONL answer: its prompt already describes each line, and json-object (one value) is skipped.
    jsonl: bool,
    fallbacks: Vec<Fallback>,
}

fn below(mode: StructuredMode) -> Option<StructuredMode> {
    match mode {
        StructuredMode::Constrained => Some(StructuredMode::JsonSchema),
        StructuredMode::JsonSchema => Some(StructuredMode::JsonObject),
        StructuredMode::JsonObject => Some(StructuredMode::None),
        StructuredMode::None => None,
    }
}

impl Ladder {
    /// Starts at the requested mode and steps down past the modes `provider` does not offer
    /// (and past json-schema when there is no schema).
    pub(crate) fn new(request: &Request, provider: &str, offered: &[StructuredMode]) -> Self {
        let mut ladder = Self {
            requested: request.structured,
            current: request.structured,
            has_schema: request.schema.is_some(),
            jsonl: request.jsonl,
            fallbacks: Vec::new(),
        };
        loop {
            let reason = if !offered.contains(&ladder.current) {
                match ladder.current {
                    StructuredMode::Constrained => "constrained decoding needs the local model".to_string(),
                    mode => format!("the {provider} provider has no {mode} mode"),
                }
            } else if ladder.current == StructuredMode::JsonSchema && !ladder.has_schema {
                "no schema was given".to_string()
            } else {
                break;
            };
            if !ladder.step_down(reason) {
                break;
            }
        }
        ladder
    }

    pub(crate) fn current(&self) -> StructuredMode {
        self.current
    }

    /// Moves one mode down; `false` when already at prompt-only.
    pub(crate) fn step_down(&mut self, reason: String) -> bool {
        let Some(mut next) = below(self.current) else { return false };
        if self.jsonl && next == StructuredMode::JsonObject {
            next = StructuredMode::None;
        }
        self.fallbacks.push(Fallback { from: self.current, to: next, reason });
        self.current = next;
        true
    }

    /// Whether the schema must be described in the prompt at the current mode.
    fn schema_in_prompt(&self) -> bool {
        self.has_schema
            && !self.jsonl
            && match self.current {
                StructuredMode::JsonObject => true,
                StructuredMode::None => self.requested != StructuredMode::None,
                StructuredMode::JsonSchema | StructuredMode::Constrained => false,
            }
    }

    /// The request to send at the current mode.
    pub(crate) fn request_for(&self, request: &Request) -> Request {
        let mut sent = if self.schema_in_prompt() { request.with_schema_in_prompt() } else { request.clone() };
        sent.structured = self.current;
        sent
    }

    pub(crate) fn report(&self) -> ModeReport {
        ModeReport {
            requested: self.requested,
            used: self.current,
            schema_in_prompt: self.schema_in_prompt(),
            fallbacks: self.fallbacks.clone(),
        }
    }
}

/// What a provider offering `offered` sends on its first attempt at `request` (the request at the best
/// mode it offers, the schema put in the prompt when that mode needs it) and the mode report. A batch
/// has no second attempt: this is what its input file carries.
pub fn first_attempt(provider: &str, offered: &[StructuredMode], request: &Request) -> (Request, ModeReport) {
    let ladder = Ladder::new(request, provider, offered);
    (ladder.request_for(request), ladder.report())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use StructuredMode::*;

    const ALL: &[StructuredMode] = &[JsonSchema, JsonObject, None];

    #[test]
    fn steps_down_with_reasons_until_prompt_only() {
        let request = Request::new("m").user("u").structured(JsonSchema, Some(json!({"type":"object"})));
        let mut ladder = Ladder::new(&request, "openai", ALL);
        assert_eq!(ladder.current(), JsonSchema);
        assert!(!ladder.report().schema_in_prompt);
        assert!(ladder.step_down("HTTP 500".into()));
        assert_eq!(ladder.current(), JsonObject);
        assert!(ladder.report().schema_in_prompt);
        assert!(ladder.request_for(&request).messages[0].content.contains("JSON Schema"));
        assert!(ladder.step_down("HTTP 400".into()));
        assert!(!ladder.step_down("again".into()));
        let report = ladder.report();
        assert_eq!((report.requested, report.used, report.schema_in_prompt), (JsonSchema, None, true));
        assert_eq!(report.fallbacks.len(), 2);
        assert_eq!(ladder.request_for(&request).structured, None);
    }

    #[test]
    fn starts_below_what_the_provider_lacks() {
        let request = Request::new("m").user("u").structured(Constrained, Some(json!({})));
        let ladder = Ladder::new(&request, "anthropic", &[None]);
        let report = ladder.report();
        assert_eq!(report.used, None);
        assert_eq!(report.fallbacks.len(), 3);
        assert!(report.fallbacks[0].reason.contains("local model"));
        assert!(report.fallbacks[1].reason.contains("anthropic provider has no json-schema"));
        let no_schema = Request::new("m").user("u").structured(JsonSchema, Option::None);
        let ladder = Ladder::new(&no_schema, "openai", ALL);
        assert_eq!(ladder.current(), JsonObject);
        assert_eq!(ladder.report().fallbacks[0].reason, "no schema was given");
        assert!(!ladder.report().schema_in_prompt);
    }

    #[test]
    fn prompt_only_requests_are_sent_as_written() {
        let request = Request::new("m").user("u").structured(None, Some(json!({})));
        let ladder = Ladder::new(&request, "openai", ALL);
        assert_eq!(ladder.request_for(&request), request);
        assert!(!ladder.report().schema_in_prompt);
    }
}
