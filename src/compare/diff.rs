//! The differences between two prompt files, field by field, each changed field as a line diff
//! (the `similar` crate's Myers diff): what a twin changed, or how any two prompts differ.

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

use crate::prompt::file::PromptFile;

/// One line of a field's diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    /// `same`, `removed` (only in A) or `added` (only in B).
    pub change: Change,
    /// The line without its line break.
    pub text: String,
}

/// Which side a diff line is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Same,
    Removed,
    Added,
}

/// A field that differs between the two prompts, with its lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldDiff {
    pub field: &'static str,
    pub lines: Vec<DiffLine>,
}

/// Every field of `a` and `b` that differs, in the prompt file's order (fields equal in both are left out).
pub fn prompt_diff(a: &PromptFile, b: &PromptFile) -> Vec<FieldDiff> {
    let fields = [
        ("id", Some(a.id.clone()), Some(b.id.clone())),
        ("description", a.description.clone(), b.description.clone()),
        ("response_type", Some(json_text(&a.response_type)), Some(json_text(&b.response_type))),
        ("profile", a.profile.map(|p| json_text(&p)), b.profile.map(|p| json_text(&p))),
        ("max_turns", a.max_turns.map(|n| n.to_string()), b.max_turns.map(|n| n.to_string())),
        ("signature", a.signature.clone(), b.signature.clone()),
        ("schema_file", path_text(a), path_text(b)),
        ("system", a.system.clone(), b.system.clone()),
        ("template", Some(a.template.clone()), Some(b.template.clone())),
        ("schema", a.schema.as_ref().map(pretty), b.schema.as_ref().map(pretty)),
        ("variables", Some(pretty(&a.variables)), Some(pretty(&b.variables))),
        ("terms", Some(pretty(&a.terms)), Some(pretty(&b.terms))),
        ("cases", Some(pretty(&a.cases)), Some(pretty(&b.cases))),
        ("provider", Some(pretty(&a.provider)), Some(pretty(&b.provider))),
    ];
    fields
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(field, a, b)| FieldDiff {
            field,
            lines: line_diff(a.as_deref().unwrap_or(""), b.as_deref().unwrap_or("")),
        })
        .collect()
}

/// The lines of `a` and `b`, each marked same, removed or added.
pub fn line_diff(a: &str, b: &str) -> Vec<DiffLine> {
    TextDiff::from_lines(a, b)
        .iter_all_changes()
        .map(|change| DiffLine {
            change: match change.tag() {
                ChangeTag::Equal => Change::Same,
                ChangeTag::Delete => Change::Removed,
                ChangeTag::Insert => Change::Added,
            },
            text: change.value().trim_end_matches(['\n', '\r']).to_string(),
        })
        .collect()
}

/// The diff as text: each changed field's name, then its changed lines (`-` A, `+` B) with up to
/// `context` unchanged lines around them (`…` where lines are left out).
pub fn render(diffs: &[FieldDiff], context: usize) -> String {
    let mut out = String::new();
    for diff in diffs {
        out.push_str(&format!("@@ {}\n", diff.field));
        let near = |at: usize| {
            let from = at.saturating_sub(context);
            diff.lines
                .get(from..=(at + context).min(diff.lines.len().saturating_sub(1)))
                .is_some_and(|window| window.iter().any(|l| l.change != Change::Same))
        };
        let mut skipped = false;
        for (at, line) in diff.lines.iter().enumerate() {
            let mark = match line.change {
                Change::Same if !near(at) => {
                    if !skipped {
                        out.push_str("  …\n");
                    }
                    skipped = true;
                    continue;
                }
                Change::Same => ' ',
                Change::Removed => '-',
                Change::Added => '+',
            };
            skipped = false;
            out.push_str(&format!("{mark} {}\n", crate::safe_text::escape_controls(&line.text)));
        }
    }
    out
}

fn json_text(value: &impl Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn path_text(prompt: &PromptFile) -> Option<String> {
    prompt.schema_file.as_ref().map(|p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_fields_are_listed_with_their_lines() {
        let a = PromptFile::new("p", "one\ntwo\nthree\nfour\nfive\n");
        let mut b = a.clone();
        b.template = "one\ntwo\n3\nfour\nfive\n".into();
        let diffs = prompt_diff(&a, &b);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].field, "template");
        let changed: Vec<_> = diffs[0].lines.iter().filter(|l| l.change != Change::Same).collect();
        assert_eq!(changed.len(), 2);
        assert_eq!((changed[0].change, changed[0].text.as_str()), (Change::Removed, "three"));
        assert_eq!((changed[1].change, changed[1].text.as_str()), (Change::Added, "3"));
        assert_eq!(render(&diffs, 1), "@@ template\n  …\n  two\n- three\n+ 3\n  four\n  …\n");
        assert!(prompt_diff(&a, &a).is_empty());
    }
}
