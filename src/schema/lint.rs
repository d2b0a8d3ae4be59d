//! Lint of a schema as typed: JSON syntax errors with line:column, schema errors with their path.

use serde::Serialize;
use serde_json::Value;

use super::CompiledSchema;

/// One problem in a schema text: where (line:column for syntax, a JSON Pointer for schema rules) and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LintIssue {
    /// 1-based line and column of a JSON syntax error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// Path inside the schema document of a schema error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub message: String,
}

impl std::fmt::Display for LintIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column, &self.path) {
            (Some(line), Some(column), _) => write!(f, "{line}:{column}: {}", self.message),
            (_, _, Some(path)) => write!(f, "at {path:?}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// Parses and compiles a schema text, or says everything wrong with it.
pub fn lint_schema_text(text: &str) -> Result<CompiledSchema, Vec<LintIssue>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        vec![LintIssue { line: Some(e.line()), column: Some(e.column()), path: None, message }]
    })?;
    CompiledSchema::compile(&value).map_err(|invalid| {
        invalid
            .issues
            .into_iter()
            .map(|i| LintIssue { line: None, column: None, path: Some(i.path), message: i.message })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_line_and_column() {
        let issues = lint_schema_text("{\n  \"type\": \"object\",\n  \"properties\": {\n}").unwrap_err();
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].line, Some(4));
        assert!(issues[0].message.contains("EOF"), "{}", issues[0]);
    }

    #[test]
    fn schema_error_has_path() {
        let issues = lint_schema_text(r#"{"properties": {"age": {"type": "integr"}}}"#).unwrap_err();
        assert_eq!(issues[0].path.as_deref(), Some("/properties/age/type"), "{issues:?}");
    }

    #[test]
    fn good_schema_compiles() {
        assert!(lint_schema_text(r#"{"type": "array", "items": {"type": "string"}}"#).is_ok());
    }
}
