//! `--env-file FILE`: a dotenv file's variables (provider keys, base URLs) set for this command,
//! as promptfoo's `--env-file` does. `KEY=VALUE` a line (`export ` before it allowed), `#` comments
//! and blank lines, values bare (a ` #` starts a comment), in single quotes (as written) or in double
//! quotes (`\n`, `\t`, `\"`, `\\` escapes). A variable already set in the environment is not
//! overridden. A bad line is an error naming `file:line`; a value is never printed or recorded (an
//! error names the key at most).

use std::path::Path;

/// The most an env file may hold.
const LIMIT: crate::files::Limit = crate::files::Limit { kind: "an env file", bytes: 1024 * 1024 };

/// Reads `path` and sets each variable the environment does not already hold; the names of those
/// it left alone (set already), for a note.
pub fn load(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = crate::files::read_text(path, LIMIT).map_err(|e| anyhow::anyhow!("--env-file: {e}"))?;
    let pairs = parse(&text).map_err(|(line, why)| anyhow::anyhow!("{}:{line}: {why}", path.display()))?;
    let mut kept = Vec::new();
    for (key, value) in pairs {
        if std::env::var_os(&key).is_some() {
            kept.push(key);
        } else {
            std::env::set_var(&key, value);
        }
    }
    Ok(kept)
}

/// The `(key, value)` pairs of a dotenv text, in order; `Err((line, why))` at the first bad line
/// (`why` never holds a value).
pub fn parse(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut pairs = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let at = index + 1;
        let Some((key, rest)) = line.split_once('=') else {
            return Err((at, "not KEY=VALUE (the line is not shown: it may hold a secret)".into()));
        };
        let key = key.trim();
        let good = !key.is_empty()
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !key.starts_with(|c: char| c.is_ascii_digit());
        if !good {
            let shown: String = key.chars().filter(|c| !c.is_control()).take(40).collect();
            return Err((at, format!("{shown:?} is not the name of an environment variable")));
        }
        let value = value_of(rest.trim_start()).map_err(|why| (at, format!("{key}: {why}")))?;
        pairs.push((key.to_string(), value));
    }
    Ok(pairs)
}

/// A value as written after `=`: quoted, or bare up to a ` #` comment.
fn value_of(rest: &str) -> Result<String, String> {
    let after_quote = |tail: &str| {
        let tail = tail.trim();
        if tail.is_empty() || tail.starts_with('#') {
            Ok(())
        } else {
            Err("text after the closing quote (only a # comment may follow)".to_string())
        }
    };
    if let Some(inner) = rest.strip_prefix('\'') {
        let Some(end) = inner.find('\'') else { return Err("the single quote is not closed on its line".into()) };
        after_quote(&inner[end + 1..])?;
        return Ok(inner[..end].to_string());
    }
    if let Some(inner) = rest.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = inner.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    after_quote(&inner[at + 1..])?;
                    return Ok(value);
                }
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some('r') => value.push('\r'),
                    Some(other @ ('"' | '\\' | '$')) => value.push(other),
                    Some(other) => {
                        value.push('\\');
                        value.push(other);
                    }
                    None => break,
                },
                c => value.push(c),
            }
        }
        return Err("the double quote is not closed on its line".into());
    }
    let bare = match rest.find(" #").or_else(|| rest.find("\t#")) {
        Some(comment) => &rest[..comment],
        None => rest,
    };
    if bare.starts_with('#') {
        return Ok(String::new());
    }
    Ok(bare.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines_quotes_and_comments_read_as_dotenv_writes_them() {
        let text = "# keys\n\nOPENAI_API_KEY=sk-bare # a comment\nexport B='single # kept'\nC=\"two\\nlines \\\"q\\\"\" # c\nD=\nE=a#b\n";
        let pairs = parse(text).unwrap();
        let expected =
            [("OPENAI_API_KEY", "sk-bare"), ("B", "single # kept"), ("C", "two\nlines \"q\""), ("D", ""), ("E", "a#b")];
        let got: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_bad_line_is_named_by_its_number_and_never_shows_a_value() {
        let cases = [
            ("A=1\nsk-secret-value\n", 2, "not KEY=VALUE"),
            ("A=1\n\n1BAD=sk-secret-value\n", 3, "\"1BAD\" is not the name"),
            ("KEY=\"sk-secret-value\n", 1, "KEY: the double quote is not closed"),
            ("KEY='sk-secret-value\n", 1, "KEY: the single quote is not closed"),
            ("KEY=\"sk-secret\" value\n", 1, "KEY: text after the closing quote"),
        ];
        for (text, line, says) in cases {
            let (at, why) = parse(text).unwrap_err();
            assert_eq!(at, line, "{text}");
            assert!(why.contains(says), "{text} → {why}");
            assert!(!why.contains("sk-secret"), "{why}");
        }
    }
}
