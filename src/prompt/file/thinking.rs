//! The prompt's thinking switch (`[provider] thinking = 512`, `true` or `false`; the command line's
//! `--think[=BUDGET]`): whether the local model thinks before its answer, and with how many tokens at
//! most. Read from TOML with an error naming the bad value (at its line and column).

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::engine::thinking::DEFAULT_THINKING_BUDGET;

/// Whether the model thinks first, as the prompt or the command line writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Thinking {
    /// `thinking = false`: the template's thinking off (the default).
    Off,
    /// `thinking = true`, `--think`: the default budget ([`DEFAULT_THINKING_BUDGET`]).
    On,
    /// `thinking = N`, `--think=N`: at most N thinking tokens.
    Budget(u32),
}

impl Thinking {
    /// The most thinking tokens (`None`: no thinking).
    pub fn budget(self) -> Option<u32> {
        match self {
            Self::Off => None,
            Self::On => Some(DEFAULT_THINKING_BUDGET),
            Self::Budget(n) => Some(n),
        }
    }

    /// A budget read from a number; 0 is refused (no thinking is `false`).
    fn of_number(n: i128) -> Result<Self, String> {
        match u32::try_from(n) {
            Ok(0) => Err("thinking 0 is a budget of no tokens: write thinking = false (or leave --think out) to run \
                           without thinking"
                .into()),
            Ok(n) => Ok(Self::Budget(n)),
            Err(_) => Err(format!("thinking {n} is not a budget of thinking tokens from 1 to {}", u32::MAX)),
        }
    }

    /// `--think[=BUDGET]`'s value: a number of tokens, or `true`/`false`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "true" => Ok(Self::On),
            "false" => Ok(Self::Off),
            number => match number.parse::<i128>() {
                Ok(n) => Self::of_number(n),
                Err(_) => Err(format!("{text:?} is not a thinking budget: a number of tokens, e.g. --think=512")),
            },
        }
    }
}

impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => serializer.serialize_bool(false),
            Self::On => serializer.serialize_bool(true),
            Self::Budget(n) => serializer.serialize_u32(*n),
        }
    }
}

struct ThinkingVisitor;

impl Visitor<'_> for ThinkingVisitor {
    type Value = Thinking;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("true, false, or a number of thinking tokens (e.g. thinking = 512)")
    }

    fn visit_bool<E: de::Error>(self, on: bool) -> Result<Thinking, E> {
        Ok(if on { Thinking::On } else { Thinking::Off })
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Thinking, E> {
        Thinking::of_number(n.into()).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Thinking, E> {
        Thinking::of_number(n.into()).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ThinkingVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Table {
        thinking: Thinking,
    }

    fn read(text: &str) -> Result<Thinking, String> {
        toml::from_str::<Table>(text).map(|t| t.thinking).map_err(|e| e.to_string())
    }

    #[test]
    fn thinking_reads_a_switch_or_a_budget_and_names_a_bad_value() {
        assert_eq!(read("thinking = 512"), Ok(Thinking::Budget(512)));
        assert_eq!(read("thinking = true").map(Thinking::budget), Ok(Some(DEFAULT_THINKING_BUDGET)));
        assert_eq!(read("thinking = false").map(Thinking::budget), Ok(None));
        assert!(read("thinking = 0").unwrap_err().contains("thinking = false"));
        assert!(read("thinking = -3").unwrap_err().contains("thinking -3 is not a budget"));
        assert!(read("thinking = \"lots\"").unwrap_err().contains("a number of thinking tokens"));
        assert_eq!(Thinking::parse("8"), Ok(Thinking::Budget(8)));
        assert!(Thinking::parse("eight").unwrap_err().contains("\"eight\" is not a thinking budget"));
        let written = toml::to_string(&Table { thinking: Thinking::Budget(64) }).unwrap();
        assert_eq!(written.trim(), "thinking = 64");
    }
}
