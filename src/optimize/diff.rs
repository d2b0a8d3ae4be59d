//! A candidate's edit shown as a unified line diff of its system prompt and template against the
//! original's (the `similar` crate's Myers diff).

use similar::TextDiff;

/// The diff of `system` and `template` against the original's; empty when neither changed.
pub fn edit_diff(original: (Option<&str>, &str), candidate: (Option<&str>, &str)) -> String {
    let mut out = String::new();
    for (name, old, new) in
        [("system", original.0.unwrap_or(""), candidate.0.unwrap_or("")), ("template", original.1, candidate.1)]
    {
        if old == new {
            continue;
        }
        let (old, new) = (with_newline(old), with_newline(new));
        let diff = TextDiff::from_lines(old.as_str(), new.as_str());
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(2)
                .header(&format!("original {name}"), &format!("candidate {name}"))
                .to_string(),
        );
    }
    out
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') || text.is_empty() {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_shows_only_the_changed_field_and_its_lines() {
        let diff = edit_diff((Some("Be brief.\nUse JSON."), "T"), (Some("Be brief.\nUse strict JSON."), "T"));
        assert!(diff.contains("--- original system") && diff.contains("+++ candidate system"), "{diff}");
        assert!(diff.contains("-Use JSON.\n+Use strict JSON.\n"), "{diff}");
        assert!(!diff.contains("template"), "{diff}");
        assert_eq!(edit_diff((None, "T"), (None, "T")), "");
    }
}
