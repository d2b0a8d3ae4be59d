//! The `json` response type: one JSON value per answer, fed chunk by chunk, under the four profiles.
//!
//! - `lenient` (default): BOM, fences, prose before and after, the first value found, trailing commas,
//!   and repair of a truncated tail, each change reported as a [`Repair`](crate::output::Repair)
//!   ([`lenient`] has the rules).
//! - `strict`: RFC 8259, nothing stripped; the whole text must be one value (blanks around it allowed).
//! - `trustgraph`: exactly TrustGraph's `parse_json` ([`trustgraph_parse_json`]) + `jsonschema.validate`.
//! - `ptc`: exactly PtcRunner's `JsonParser.parse` ([`ptc_extract_json`]).
//!
//! Feeding costs time proportional to the chunk: `lenient` and `strict` scan and build the value as
//! it arrives ([`scan`], [`build`]); `trustgraph` and `ptc` keep cheap gates ([`gate`]) and run the
//! peers' exact extraction on the whole text when a report is asked for. Nesting deeper than
//! [`scan::MAX_DEPTH`] is an error (no recursion anywhere, so no stack overflow).

pub mod build;
pub mod extract;
pub mod gate;
pub mod lenient;
pub mod matcher;
pub mod repair;
mod report;
pub mod scan;

pub use build::items_of;
pub use extract::{ptc_extract_json, trustgraph_parse_json};

use std::sync::Arc;

use serde_json::Value;

use self::build::Builder;
use self::gate::{PtcGate, TrustgraphGate};
use self::lenient::Lenient;
use self::scan::{Expect, Fed, Grammar, ScanError, Scanner};
use super::{OutputParser, Profile, Report};
use crate::schema::Check;

/// Parses a `json` answer fed chunk by chunk under one profile; [`OutputParser::report`] says what
/// the answer gives if it ended after the last chunk.
pub struct JsonParser {
    profile: Profile,
    check: Option<Arc<dyn Check>>,
    text: String,
    engine: Engine,
}

enum Engine {
    Lenient(Box<Lenient>),
    Strict(Box<Strict>),
    Trustgraph(TrustgraphGate),
    Ptc(PtcGate),
}

/// The `strict` profile: one value, then only JSON whitespace.
#[derive(Clone, Debug)]
struct Strict {
    scanner: Scanner,
    builder: Builder,
    trailing: Option<usize>,
    pos: usize,
}

impl Strict {
    fn feed(&mut self, text: &str) {
        if self.scanner.expect() != Expect::Done {
            match self.scanner.feed(text.get(self.pos..).unwrap_or_default(), &mut self.builder) {
                Fed::More | Fed::Failed => self.pos = text.len(),
                Fed::Done(read) => self.pos += read,
            }
        }
        if self.scanner.expect() == Expect::Done && self.trailing.is_none() {
            let rest = text.as_bytes().get(self.pos..).unwrap_or_default();
            match rest.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
                Some(at) => self.trailing = Some(self.pos + at),
                None => self.pos = text.len(),
            }
        }
    }

    fn error(&self) -> Option<ScanError> {
        if let Some(error) = self.scanner.error() {
            return Some(error.clone());
        }
        self.trailing.map(|at| ScanError { at, message: "trailing characters after the value".into(), fatal: false })
    }

    fn complete(&self) -> bool {
        self.error().is_none() && self.scanner.complete_at_end()
    }

    fn value(&self) -> Option<Value> {
        if !self.complete() {
            return None;
        }
        self.builder.root().or_else(|| build::parse_number(self.scanner.number_text()))
    }
}

/// What the `json` strategy of a sweep reads: a key that changes whenever the value the profile
/// extracts without repair may have changed (`None`: there is no value for sure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled(u8, usize, usize);

impl JsonParser {
    /// A parser for `profile`, checking the whole value against `check` when given.
    pub fn new(profile: Profile, check: Option<Arc<dyn Check>>) -> JsonParser {
        let engine = match profile {
            Profile::Lenient => Engine::Lenient(Box::default()),
            Profile::Strict => Engine::Strict(Box::new(Strict {
                scanner: Scanner::new(Grammar::RFC8259, 0),
                builder: Builder::new(true),
                trailing: None,
                pos: 0,
            })),
            Profile::Trustgraph => Engine::Trustgraph(TrustgraphGate::default()),
            Profile::Ptc => Engine::Ptc(PtcGate::default()),
        };
        JsonParser { profile, check, text: String::new(), engine }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The answer fed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The lenient engine's state (items as they complete, the item in progress), under `lenient`.
    pub fn lenient(&self) -> Option<&Lenient> {
        match &self.engine {
            Engine::Lenient(lenient) => Some(lenient),
            _ => None,
        }
    }

    /// See [`Settled`]; cheap (no decoding).
    pub fn settled(&self) -> Option<Settled> {
        match &self.engine {
            Engine::Lenient(lenient) => {
                let growing = lenient.phase() == lenient::Phase::Value;
                lenient.complete().then_some(Settled(0, lenient.epoch(), if growing { self.text.len() } else { 0 }))
            }
            Engine::Strict(strict) => {
                let growing = strict.scanner.expect() != Expect::Done;
                strict.complete().then_some(Settled(1, 0, if growing { self.text.len() } else { 0 }))
            }
            Engine::Trustgraph(gate) => gate.key().map(|(kind, at)| Settled(2, kind.into(), at)),
            Engine::Ptc(gate) => gate.key().map(|(kind, at)| Settled(3, kind.into(), at)),
        }
    }

    /// The value the profile extracts WITHOUT repairing a truncated tail (the `json` strategy), or
    /// `None`; for `trustgraph` and `ptc` this runs the peer's exact extraction on the whole text.
    pub fn settled_value(&self) -> Option<Value> {
        self.settled()?;
        match &self.engine {
            Engine::Lenient(lenient) => lenient.value(),
            Engine::Strict(strict) => strict.value(),
            Engine::Trustgraph(_) => extract::trustgraph_detail(&self.text).ok(),
            Engine::Ptc(_) => extract::ptc_detail(&self.text).ok(),
        }
    }
}

impl OutputParser for JsonParser {
    fn feed(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        match &mut self.engine {
            Engine::Lenient(lenient) => lenient.feed(&self.text),
            Engine::Strict(strict) => strict.feed(&self.text),
            Engine::Trustgraph(gate) => gate.feed(&self.text),
            Engine::Ptc(gate) => gate.feed(&self.text),
        }
    }

    fn report(&self) -> Report {
        let outcome = match &self.engine {
            Engine::Lenient(lenient) => report::lenient(&self.text, lenient),
            Engine::Strict(strict) => report::strict(&self.text, strict.value(), strict.error()),
            Engine::Trustgraph(_) => report::trustgraph(&self.text),
            Engine::Ptc(_) => report::ptc(&self.text),
        };
        Report::Json(report::finish(&self.text, self.profile, self.check.as_deref(), outcome))
    }
}

#[cfg(test)]
mod tests;
