//! The output-format part of a template, swapped between JSONL and a JSON array: the sentences the
//! sample prompts (TrustGraph's extraction prompts and their `-json` twins) use for each, and the
//! example output (one object per line ↔ a bracketed array, two-space indented, one object per line).

/// Sentences that say "JSONL" and their JSON-array twins, as the sample prompts write them.
const PHRASES: &[(&str, &str)] = &[
    (
        "Output format: JSONL. Each line is one JSON object with exactly these keys:",
        "Output format: a JSON array of objects, each with exactly these keys:",
    ),
    (
        "Output format: JSONL. Each line is one JSON object, and its \"type\" field says which kind it is:",
        "Output format: a JSON array of objects, each with a \"type\" field saying which kind it is:",
    ),
    ("Output format: JSONL. Each line is one row: a JSON object with", "Output format: a JSON array of rows, each a JSON object with"),
    (
        "Write one compact JSON object per line and nothing else: no array brackets, no commas between lines, no markdown code fences, no explanations.",
        "Write only the JSON array: no markdown code fences, no explanations before or after it.",
    ),
    (", write nothing.", ", write []."),
];

/// The line that introduces the example answer.
const EXAMPLE: &str = "Example output:";

/// Which way a template is turned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    /// JSONL → a JSON array.
    ToArray,
    /// A JSON array → JSONL.
    ToLines,
}

/// The template turned the other way, and what was changed (or could not be) in words.
pub(super) fn swap_template(template: &str, direction: Direction) -> (String, Vec<String>) {
    let mut text = template.to_string();
    let mut notes = Vec::new();
    let mut sentences = 0;
    for &(lines, array) in PHRASES {
        let (from, to) = match direction {
            Direction::ToArray => (lines, array),
            Direction::ToLines => (array, lines),
        };
        if text.contains(from) {
            text = text.replace(from, to);
            sentences += 1;
        }
    }
    if sentences > 0 {
        notes.push(format!("template: {sentences} output-format sentence(s) swapped"));
    } else {
        notes.push(
            "template: no known output-format sentence found; the instructions were left as written (edit them by hand)"
                .to_string(),
        );
    }
    match swap_example(&text, direction) {
        Some((swapped, count)) => {
            text = swapped;
            notes.push(format!("template: example output of {count} item(s) rewritten"));
        }
        None if text.contains(EXAMPLE) => {
            notes.push("template: the example output is not in the expected shape; left as written".to_string());
        }
        None => {}
    }
    let leftover = match direction {
        Direction::ToArray => text.contains("JSONL"),
        Direction::ToLines => text.contains("JSON array"),
    };
    if leftover {
        let word = if direction == Direction::ToArray { "JSONL" } else { "JSON array" };
        notes.push(format!("template: still says {word:?} somewhere; check the wording"));
    }
    (text, notes)
}

/// The example block after [`EXAMPLE`] rewritten, and how many items it holds; `None` when there is
/// no example or it is not one JSON value per line (lines) or a bracketed array of such (array).
fn swap_example(text: &str, direction: Direction) -> Option<(String, usize)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let head = lines.iter().position(|l| l.trim_end() == EXAMPLE)?;
    let start = head + 1;
    let end = lines.iter().skip(start).position(|l| l.trim().is_empty()).map_or(lines.len(), |n| start + n);
    let block = lines.get(start..end)?;
    let items: Vec<String> = match direction {
        Direction::ToArray => {
            let all_json = block.iter().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok());
            if block.is_empty() || !all_json {
                return None;
            }
            let count = block.len();
            let mut out = vec!["[".to_string()];
            out.extend(block.iter().enumerate().map(|(i, l)| format!("  {l}{}", if i + 1 < count { "," } else { "" })));
            out.push("]".to_string());
            out
        }
        Direction::ToLines => {
            let (first, rest) = block.split_first()?;
            let (last, middle) = rest.split_last()?;
            if first.trim() != "[" || last.trim() != "]" {
                return None;
            }
            let items: Vec<String> = middle.iter().map(|l| l.trim().trim_end_matches(',').to_string()).collect();
            if items.is_empty() || !items.iter().all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()) {
                return None;
            }
            items
        }
    };
    let count = match direction {
        Direction::ToArray => items.len() - 2,
        Direction::ToLines => items.len(),
    };
    let mut out: Vec<String> = lines.get(..start)?.iter().map(|l| l.to_string()).collect();
    out.extend(items);
    out.extend(lines.get(end..)?.iter().map(|l| l.to_string()));
    Some((out.join("\n"), count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_blocks_turn_both_ways() {
        let lines = "Say it.\nExample output:\n{\"a\": 1}\n{\"a\": 2}\n\nThanks.\n";
        let (array, notes) = swap_template(lines, Direction::ToArray);
        assert_eq!(array, "Say it.\nExample output:\n[\n  {\"a\": 1},\n  {\"a\": 2}\n]\n\nThanks.\n");
        assert!(notes.iter().any(|n| n.contains("2 item(s)")), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("no known output-format sentence")), "{notes:?}");
        assert_eq!(swap_template(&array, Direction::ToLines).0, lines);
    }

    #[test]
    fn an_example_in_another_shape_is_left_alone_and_said_so() {
        let (text, notes) = swap_template("Example output:\nsome prose\n", Direction::ToArray);
        assert_eq!(text, "Example output:\nsome prose\n");
        assert!(notes.iter().any(|n| n.contains("not in the expected shape")), "{notes:?}");
    }
}
