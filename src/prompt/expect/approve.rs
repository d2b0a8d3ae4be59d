//! "Approve as expected": an answer written into its case as the expected answer (`[cases.expected]`
//! `items` for a list, `value` otherwise, and `left_out`: what approving did not write), keeping the
//! case's `match`. TOML has no null, so null members are left out (a missing field and null compare the
//! same when scoring). Which part of a run's answer is written is `eval::approval`'s to decide.

use serde_json::Value;

use super::Expected;
use crate::output::ResponseType;
use crate::prompt::file::{PromptError, PromptFile};

impl PromptFile {
    /// Sets `case`'s expected answer to `answer` (a run's result: a jsonl answer's items, a json
    /// answer's value, a text answer's text): a list becomes `items`, anything else `value`, and
    /// `left_out` what was not written of it; the case's `match` is kept, an `expected_file` replaced.
    pub fn approve(&mut self, case: &str, answer: &Value, left_out: Vec<String>) -> Result<(), PromptError> {
        self.case(case)?;
        let id = self.id.clone();
        let refuse = |message: String| PromptError::Expectation { id: id.clone(), message };
        let answer = without_nulls(answer).map_err(|at| {
            refuse(format!("case {case:?}: the answer has null at {at}, which TOML cannot hold; not approved"))
        })?;
        let mut expected = match (answer, self.response_type) {
            (None, _) => return Err(refuse(format!("case {case:?}: there is no answer to approve"))),
            (Some(Value::Array(items)), ResponseType::Jsonl | ResponseType::Json) => Expected::items(items),
            (Some(other), ResponseType::Jsonl) => {
                return Err(refuse(format!("case {case:?}: a jsonl answer is a list of items, not {other}")))
            }
            (Some(value), _) => Expected::value(value),
        };
        let Some(target) = self.cases.iter_mut().find(|c| c.name == case) else {
            return Err(refuse(format!("no case named {case:?}")));
        };
        expected.match_on = target.expected.as_ref().and_then(|e| e.match_on.clone());
        expected.left_out = left_out;
        target.expected = Some(expected);
        Ok(())
    }
}

/// `value` with null object members left out (`Ok(None)`: the value itself is null); `Err` names
/// the pointer of a null array element.
fn without_nulls(value: &Value) -> Result<Option<Value>, String> {
    fn walk(value: &Value, at: &str) -> Result<Option<Value>, String> {
        Ok(match value {
            Value::Null => None,
            Value::Array(items) => {
                let mut kept = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    let here = format!("{at}/{index}");
                    kept.push(walk(item, &here)?.ok_or(here)?);
                }
                Some(Value::Array(kept))
            }
            Value::Object(members) => {
                let mut kept = serde_json::Map::new();
                for (name, member) in members {
                    let here = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
                    if let Some(member) = walk(member, &here)? {
                        kept.insert(name.clone(), member);
                    }
                }
                Some(Value::Object(kept))
            }
            other => Some(other.clone()),
        })
    }
    walk(value, "")
}
