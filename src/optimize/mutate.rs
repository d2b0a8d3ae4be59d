//! Mutations that need no proposer, so they run offline on the embedded model: few-shot
//! demonstrations bootstrapped from train cases that pass (their input and the answer the prompt gave,
//! as DSPy's BootstrapFewShot), put where the template says `{# demos #}` or else at its end; and
//! ablation: the system prompt with one of its instructions (a line, else a sentence) removed.

use super::evaluate::Edit;
use super::seeded::Seeded;
use crate::prompt::template::Variables;

/// Where a template wants its demonstrations (a Jinja comment: it renders to nothing without them).
pub const DEMOS_MARKER: &str = "{# demos #}";

/// Instructions removed one at a time, at most.
pub const MAX_ABLATIONS: usize = 4;

/// Demonstration sets drawn, at most.
pub const MAX_DEMO_SETS: usize = 2;

/// A passing train case: its own variables and the answer it got.
#[derive(Clone, Debug)]
pub struct Demo {
    pub case: String,
    pub variables: Variables,
    pub answer: String,
}

/// Up to [`MAX_DEMO_SETS`] different sets of `k` demonstrations from `passing`, drawn with `seed`,
/// each as an edit of `original` with its rationale.
pub fn demo_edits(original: &Edit, passing: &[Demo], k: usize, seed: u64) -> Vec<(Edit, String)> {
    let usable: Vec<&Demo> =
        passing.iter().filter(|d| !d.answer.trim().is_empty() && !d.answer.contains("endraw")).collect();
    if k == 0 || usable.is_empty() {
        return Vec::new();
    }
    let mut rng = Seeded::new(seed);
    let mut edits: Vec<(Edit, String)> = Vec::new();
    let mut drawn: Vec<Vec<String>> = Vec::new();
    for _ in 0..MAX_DEMO_SETS * 3 {
        if edits.len() == MAX_DEMO_SETS {
            break;
        }
        let mut order = usable.clone();
        rng.shuffle(&mut order);
        order.truncate(k);
        let mut names: Vec<String> = order.iter().map(|d| d.case.clone()).collect();
        names.sort();
        if drawn.contains(&names) {
            continue;
        }
        drawn.push(names.clone());
        let template = with_demos(&original.template, &order);
        let rationale = format!(
            "{} demonstration{} from passing train cases: {}",
            order.len(),
            if order.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
        edits.push((Edit { system: original.system.clone(), template }, rationale));
    }
    edits
}

/// `template` with the demonstrations where it marks them, else after it; written raw, so braces in
/// an answer are text, not template.
pub fn with_demos(template: &str, demos: &[&Demo]) -> String {
    let mut block = String::from("{% raw %}Examples of inputs with their correct answers:\n");
    for demo in demos {
        block.push_str("\nInput:\n");
        for (name, value) in &demo.variables {
            let shown = match value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            block.push_str(&format!("{name}: {shown}\n"));
        }
        block.push_str("Answer:\n");
        block.push_str(demo.answer.trim_end());
        block.push('\n');
    }
    block.push_str("{% endraw %}");
    match template.find(DEMOS_MARKER) {
        Some(at) => format!("{}{block}{}", &template[..at], &template[at + DEMOS_MARKER.len()..]),
        None => format!("{}\n\n{block}", template.trim_end()),
    }
}

/// The system prompt's instructions: its non-empty lines, or its sentences when it is one line.
fn instructions(system: &str) -> Vec<String> {
    let lines: Vec<String> = system.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
    if lines.len() > 1 {
        return lines;
    }
    let mut sentences = Vec::new();
    let mut current = String::new();
    for (i, c) in system.char_indices() {
        current.push(c);
        let next = system[i + c.len_utf8()..].chars().next();
        if matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace) {
            sentences.push(current.trim().to_string());
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        sentences.push(current.trim().to_string());
    }
    sentences
}

/// `original` with one instruction of its system prompt removed, for each of the first
/// [`MAX_ABLATIONS`] (none when the system prompt has fewer than 2).
pub fn ablation_edits(original: &Edit) -> Vec<(Edit, String)> {
    let Some(system) = original.system.as_deref() else { return Vec::new() };
    let units = instructions(system);
    if units.len() < 2 {
        return Vec::new();
    }
    let joiner = if system.lines().filter(|l| !l.trim().is_empty()).count() > 1 { "\n" } else { " " };
    (0..units.len().min(MAX_ABLATIONS))
        .map(|skip| {
            let kept: Vec<&str> =
                units.iter().enumerate().filter(|(i, _)| *i != skip).map(|(_, u)| u.as_str()).collect();
            let removed = units.get(skip).map_or("", String::as_str);
            let edit = Edit { system: Some(kept.join(joiner)), template: original.template.clone() };
            (edit, format!("without the instruction {:?}", crate::eval::values::cut(removed, 80)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo(case: &str, text: &str, answer: &str) -> Demo {
        let mut variables = Variables::new();
        variables.insert("text".into(), serde_json::Value::String(text.into()));
        Demo { case: case.into(), variables, answer: answer.into() }
    }

    #[test]
    fn demonstrations_go_where_the_template_marks_them_else_at_its_end_and_render() {
        let d = demo("a", "IN", "{\"x\": {\"y\": \"{{z}}\"}}");
        let marked = with_demos("Before\n{# demos #}\nAfter {{text}}", &[&d]);
        assert!(
            marked.starts_with("Before\n{% raw %}") && marked.ends_with("{% endraw %}\nAfter {{text}}"),
            "{marked}"
        );
        let appended = with_demos("Do {{text}}", &[&d]);
        assert!(appended.starts_with("Do {{text}}\n\n{% raw %}"), "{appended}");
        let mut vars = Variables::new();
        vars.insert("text".into(), serde_json::Value::String("NOW".into()));
        let rendered = crate::prompt::template::render_prompt(None, &appended, &vars).unwrap().user;
        assert!(
            rendered.contains("Do NOW") && rendered.contains("text: IN") && rendered.contains("\"{{z}}\""),
            "{rendered}"
        );
    }

    #[test]
    fn demo_sets_are_seeded_distinct_and_need_passing_cases() {
        let original = Edit { system: None, template: "T {{text}}".into() };
        let passing = vec![demo("a", "A", "1"), demo("b", "B", "2"), demo("c", "C", "3")];
        let edits = demo_edits(&original, &passing, 2, 4);
        assert_eq!(edits.len(), 2);
        assert_ne!(edits[0].0, edits[1].0);
        assert_eq!(
            edits.iter().map(|e| e.0.clone()).collect::<Vec<_>>(),
            demo_edits(&original, &passing, 2, 4).into_iter().map(|e| e.0).collect::<Vec<_>>()
        );
        assert!(demo_edits(&original, &[], 2, 4).is_empty());
        assert_eq!(demo_edits(&original, &passing[..1], 3, 4).len(), 1, "one case: one set");
    }

    #[test]
    fn ablation_removes_one_line_or_sentence_at_a_time_bounded() {
        let lines = Edit { system: Some("Be brief.\n\nUse JSON.\nNo prose.".into()), template: "T".into() };
        let edits = ablation_edits(&lines);
        assert_eq!(edits.len(), 3);
        assert_eq!(edits[0].0.system.as_deref(), Some("Use JSON.\nNo prose."));
        assert_eq!(edits[2].0.system.as_deref(), Some("Be brief.\nUse JSON."));
        let sentences = Edit { system: Some("One. Two! Three? Four. Five. Six.".into()), template: "T".into() };
        let edits = ablation_edits(&sentences);
        assert_eq!(edits.len(), MAX_ABLATIONS);
        assert_eq!(edits[1].0.system.as_deref(), Some("One. Three? Four. Five. Six."));
        assert!(ablation_edits(&Edit { system: Some("Only one.".into()), template: "T".into() }).is_empty());
        assert!(ablation_edits(&Edit { system: None, template: "T".into() }).is_empty());
    }
}
