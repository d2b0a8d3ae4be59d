//! Translates PtcRunner's Mustache forms into Jinja before minijinja compiles a template.
//!
//! The rules (the template is Jinja; these Mustache forms are recognised on top):
//!
//! - `{{#name}}…{{/name}}` is a section: over a list, the body repeats once per element; a map (or any
//!   other truthy value) renders the body once with that value as the element; a falsy value
//!   (`null`, `false`, `""`, `[]`) renders nothing. `{{^name}}…{{/name}}` renders its body only when
//!   the value is falsy. The closing name must match the opening one.
//! - Inside a section, a plain name `{{field}}` or path `{{a.b}}` is looked up in the current element,
//!   then in each enclosing element, then in the prompt's variables (and Jinja locals), as PtcRunner
//!   does; `{{.}}` is the element itself (a scalar: a map or list there is an error).
//! - `{{! comment }}` is dropped; `{{{name}}}` and `{{& name}}` are plain variables (nothing is ever
//!   escaped). A name with a hyphen (`{{object-entity}}`) is looked up as a name, not as a subtraction.
//! - A section or comment tag alone on its line takes the whole line with it (Mustache's standalone
//!   rule), so section tags on their own lines leave no blank lines behind.
//! - Every name must exist: an undefined section name or field is an error naming it, never empty output.
//! - Nothing inside `{% raw %}…{% endraw %}`, `{# … #}` or `{% … %}` is touched, and `{{ … }}` holding
//!   any other Jinja expression (filters, calls, operators, `{{- x -}}`) is left to Jinja, where it sees
//!   Jinja's scope only (not the section's element).
//! - Line numbers are kept: every newline of the source stays on the same line of the translation
//!   (a swallowed newline moves into a Jinja comment), so errors point at the author's lines.

use super::{Part, TemplateError};

/// Reserved prefix of the names the translation introduces (functions and loop variables).
pub const RESERVED: &str = "__tb_";
/// Function: `__tb_lookup([elements…], "path")` resolves a Mustache name.
pub(crate) const LOOKUP: &str = "__tb_lookup";
/// Function: `__tb_section(value)` turns a section value into the list of elements to render.
pub(crate) const SECTION: &str = "__tb_section";
/// Function: `__tb_falsy(value)` is Mustache's falsiness, for inverted sections.
pub(crate) const FALSY: &str = "__tb_falsy";
/// Function: `__tb_dot(element)` is `{{.}}`.
pub(crate) const DOT: &str = "__tb_dot";

/// Deepest nesting of Mustache sections accepted (PtcRunner stops at 20).
pub const MAX_SECTION_DEPTH: usize = 64;

/// An open section while translating.
struct Open {
    name: String,
    inverted: bool,
    line: usize,
    /// The loop variable holding the element (`None` for an inverted section, which pushes nothing).
    element: Option<String>,
}

/// Names the translation found at the top level (section names and hyphenated names), for
/// [`super::Template::variables`].
pub(crate) struct Translation {
    pub jinja: String,
    pub top_level_names: Vec<String>,
}

/// Translates the Mustache forms of `src` into Jinja, keeping every line on its line.
pub(crate) fn translate(part: Part, src: &str) -> Result<Translation, TemplateError> {
    let mut t = Translator {
        part,
        src,
        out: String::with_capacity(src.len() + 64),
        stack: Vec::new(),
        names: Vec::new(),
        next_var: 0,
    };
    t.run()?;
    Ok(Translation { jinja: t.out, top_level_names: t.names })
}

struct Translator<'a> {
    part: Part,
    src: &'a str,
    out: String,
    stack: Vec<Open>,
    names: Vec<String>,
    next_var: usize,
}

impl Translator<'_> {
    fn run(&mut self) -> Result<(), TemplateError> {
        let src = self.src;
        let bytes = src.as_bytes();
        let mut pos = 0;
        while pos < src.len() {
            let Some(rel) = src[pos..].find('{') else {
                self.out.push_str(&src[pos..]);
                break;
            };
            let at = pos + rel;
            self.out.push_str(&src[pos..at]);
            pos = match bytes.get(at + 1) {
                Some(b'#') => self.copy_until(at, "#}"),
                Some(b'%') => self.block_tag(at),
                Some(b'{') => self.expression(at)?,
                _ => {
                    self.out.push('{');
                    at + 1
                }
            };
        }
        if let Some(open) = self.stack.last() {
            return Err(self.error_at_line(
                open.line,
                1,
                format!(
                    "section `{}` opened on line {} is never closed (add `{{{{/{}}}}}`)",
                    open.name, open.line, open.name
                ),
            ));
        }
        Ok(())
    }

    /// Copies from `at` through the first `end` (or to the end of the source: Jinja reports it).
    fn copy_until(&mut self, at: usize, end: &str) -> usize {
        let stop = self.src[at + 2..].find(end).map_or(self.src.len(), |i| at + 2 + i + end.len());
        self.out.push_str(&self.src[at..stop]);
        stop
    }

    /// A `{% … %}` tag, copied as is; a `{% raw %}` block is copied through its `{% endraw %}`.
    fn block_tag(&mut self, at: usize) -> usize {
        let Some(end) = find_close(self.src, at + 2, "%}") else {
            self.out.push_str(&self.src[at..]);
            return self.src.len();
        };
        let stop = end + 2;
        if tag_word(&self.src[at + 2..end]) == "raw" {
            let mut search = stop;
            while let Some(rel) = self.src[search..].find("{%") {
                let open = search + rel;
                let Some(close) = find_close(self.src, open + 2, "%}") else { break };
                if tag_word(&self.src[open + 2..close]) == "endraw" {
                    self.out.push_str(&self.src[at..close + 2]);
                    return close + 2;
                }
                search = close + 2;
            }
            // No `{% endraw %}`: hand the rest to Jinja untouched, which reports the open block.
            self.out.push_str(&self.src[at..]);
            return self.src.len();
        }
        self.out.push_str(&self.src[at..stop]);
        stop
    }

    /// A `{{ … }}` tag: Mustache forms are translated, Jinja expressions copied.
    fn expression(&mut self, at: usize) -> Result<usize, TemplateError> {
        let src = self.src;
        // `{{{name}}}`: Mustache's unescaped variable (we never escape anyway).
        if src[at..].starts_with("{{{") {
            if let Some(rel) = src[at + 3..].find("}}}") {
                let inner = src[at + 3..at + 3 + rel].trim();
                if is_path(inner) {
                    self.variable(inner);
                    return Ok(at + 3 + rel + 3);
                }
            }
        }
        let content_start = at + 2;
        let first = src[content_start..].trim_start().chars().next();
        let end = if first == Some('!') {
            src[content_start..].find("}}").map(|i| content_start + i)
        } else {
            find_close(src, content_start, "}}")
        };
        let Some(end) = end else {
            self.out.push_str(&src[at..]);
            return Ok(src.len());
        };
        let stop = end + 2;
        let content = src[content_start..end].trim();
        let Some(sigil) = content.chars().next() else {
            self.out.push_str(&src[at..stop]);
            return Ok(stop);
        };
        match sigil {
            '#' | '^' | '/' => {
                let name = content[1..].trim();
                if !is_path(name) {
                    return Err(self.error_at(
                        at,
                        format!("`{}` is not a section name (letters, digits, `_`, `-`, dots between)", &src[at..stop]),
                    ));
                }
                if sigil != '/' && self.stack.len() >= MAX_SECTION_DEPTH {
                    return Err(self.error_at(at, format!("sections nested more than {MAX_SECTION_DEPTH} deep")));
                }
                let tag = match sigil {
                    '#' => self.open(at, name, false),
                    '^' => self.open(at, name, true),
                    _ => self.close(at, name)?,
                };
                Ok(self.emit_tag(at, stop, &tag))
            }
            '!' => {
                let comment = newline_comment(src[at..stop].matches('\n').count());
                Ok(self.emit_tag(at, stop, &comment))
            }
            '&' if is_path(content[1..].trim()) => {
                self.variable(content[1..].trim());
                Ok(stop)
            }
            '.' if content == "." => {
                let Some(element) = self.stack.iter().rev().find_map(|o| o.element.clone()) else {
                    return Err(self.error_at(
                        at,
                        "`{{.}}` is the current element of a section; there is no section open here".to_string(),
                    ));
                };
                self.out.push_str(&format!("{{{{ {DOT}({element}) }}}}"));
                Ok(stop)
            }
            _ if is_path(content) && !is_keyword(content) && (self.in_section() || content.contains('-')) => {
                self.variable(content);
                Ok(stop)
            }
            _ => {
                self.out.push_str(&src[at..stop]);
                Ok(stop)
            }
        }
    }

    fn in_section(&self) -> bool {
        self.stack.iter().any(|o| o.element.is_some())
    }

    /// The lookup expression of a Mustache name in the current scope.
    fn lookup(&mut self, path: &str) -> String {
        if !self.in_section() {
            let root = path.split('.').next().unwrap_or(path).to_string();
            if !self.names.contains(&root) {
                self.names.push(root);
            }
        }
        let elements: Vec<&str> = self.stack.iter().rev().filter_map(|o| o.element.as_deref()).collect();
        format!("{LOOKUP}([{}], \"{path}\")", elements.join(", "))
    }

    fn variable(&mut self, path: &str) {
        let lookup = self.lookup(path);
        self.out.push_str(&format!("{{{{ {lookup} }}}}"));
    }

    fn open(&mut self, at: usize, name: &str, inverted: bool) -> String {
        let value = self.lookup(name);
        let line = line_col(self.src, at).0;
        if inverted {
            self.stack.push(Open { name: name.to_string(), inverted, line, element: None });
            format!("{{% if {FALSY}({value}) %}}")
        } else {
            self.next_var += 1;
            let element = format!("{RESERVED}e{}", self.next_var);
            let tag = format!("{{% for {element} in {SECTION}({value}) %}}");
            self.stack.push(Open { name: name.to_string(), inverted, line, element: Some(element) });
            tag
        }
    }

    fn close(&mut self, at: usize, name: &str) -> Result<String, TemplateError> {
        match self.stack.pop() {
            Some(open) if open.name == name => {
                Ok(if open.inverted { "{% endif %}" } else { "{% endfor %}" }.to_string())
            }
            Some(open) => Err(self.error_at(
                at,
                format!(
                    "`{{{{/{name}}}}}` closes section `{}` opened on line {} (expected `{{{{/{}}}}}`)",
                    open.name, open.line, open.name
                ),
            )),
            None => Err(self.error_at(at, format!("`{{{{/{name}}}}}` closes a section that was never opened"))),
        }
    }

    /// Emits `tag` for the source tag `at..stop`. A tag alone on its line (blanks around it, then a
    /// newline or the end) takes the line with it, as Mustache's standalone rule says: its indentation,
    /// already copied, is taken back out, and the newline it swallows moves into a Jinja comment so
    /// the line count is unchanged. Returns where the source continues.
    fn emit_tag(&mut self, at: usize, stop: usize, tag: &str) -> usize {
        let line_start = self.src[..at].rfind('\n').map_or(0, |i| i + 1);
        let indent = &self.src[line_start..at];
        let rest = &self.src[stop..];
        let blanks = rest.bytes().take_while(|&b| b == b' ' || b == b'\t').count();
        let after = &rest[blanks..];
        let swallowed = if after.is_empty() {
            Some(blanks)
        } else if after.starts_with("\r\n") {
            Some(blanks + 2)
        } else if after.starts_with('\n') {
            Some(blanks + 1)
        } else {
            None
        };
        match swallowed {
            Some(len) if indent.bytes().all(|b| b == b' ' || b == b'\t') && self.out.ends_with(indent) => {
                self.out.truncate(self.out.len() - indent.len());
                self.out.push_str(tag);
                if after.is_empty() {
                    return stop + len;
                }
                self.out.push_str(&newline_comment(1));
                stop + len
            }
            _ => {
                self.out.push_str(tag);
                stop
            }
        }
    }

    fn error_at(&self, at: usize, message: String) -> TemplateError {
        let (line, column) = line_col(self.src, at);
        self.error_at_line(line, column, message)
    }

    fn error_at_line(&self, line: usize, column: usize, message: String) -> TemplateError {
        TemplateError::Syntax { part: self.part, line, column, message }
    }
}

/// A Jinja comment holding `newlines` newlines (keeps line numbers where source text is dropped).
fn newline_comment(newlines: usize) -> String {
    let mut comment = String::from("{#");
    comment.extend(std::iter::repeat_n('\n', newlines));
    comment.push_str("#}");
    comment
}

/// Finds `close` from `from`, skipping quoted Jinja strings (so `{{ "}}" }}` closes at the end).
fn find_close(src: &str, from: usize, close: &str) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if bytes[i..].starts_with(close.as_bytes()) => return Some(i),
            None => {}
        }
        i += 1;
    }
    None
}

/// The keyword of a `{% … %}` tag's content, without whitespace-control marks.
fn tag_word(content: &str) -> &str {
    let trimmed = content.trim().trim_start_matches(['-', '+']).trim_end_matches(['-', '+']).trim();
    trimmed.split_whitespace().next().unwrap_or("")
}

/// `name` or `a.b.c`, each segment of letters, digits, `_` and `-`, not starting with a digit or `-`.
pub(crate) fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|seg| {
            let mut chars = seg.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// Jinja literals that look like names.
fn is_keyword(s: &str) -> bool {
    matches!(s, "true" | "false" | "none" | "True" | "False" | "None" | "loop")
}

/// 1-based line and column (in characters) of byte offset `at`.
pub(crate) fn line_col(src: &str, at: usize) -> (usize, usize) {
    let at = at.min(src.len());
    let before = src.get(..at).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}
