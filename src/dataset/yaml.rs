//! A YAML dataset: a list of rows (mappings), read with serde-saphyr within a budget (nodes, depth,
//! scalar bytes), each row placed at its line. YAML has no row-at-a-time reader, so the file is read
//! whole, once, within the dataset cap; its rows then go out one at a time.

use std::path::Path;

use serde_json::Value;

use super::row::{kind, Cells, RowAt};
use super::{DatasetError, Take, DATASET};

/// How much a YAML dataset may ask of the parser: a 20,000-row file with a few fields a row fits.
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_nodes: 4_000_000,
            max_depth: 64,
            max_events: 8_000_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_documents: 1,
            max_total_scalar_bytes: 256 << 20,
        },
    }
}

pub(super) fn read(path: &Path, take: &mut Take<'_>) -> Result<(), DatasetError> {
    let text = crate::files::read_text(path, DATASET).map_err(|e| match e.problem {
        crate::files::Problem::NotUtf8 { line, column, byte } => DatasetError {
            at: format!("{}:{line}:{column}", path.display()),
            message: format!("not UTF-8 (byte 0x{byte:02x}); a dataset is UTF-8 text"),
        },
        problem => DatasetError::file(path, problem.to_string()),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let rows: Vec<serde_saphyr::Spanned<Value>> =
        serde_saphyr::from_str_with_options(text, options()).map_err(|e| {
            let message = e.without_snippet().to_string();
            match e.location() {
                Some(at) => {
                    RowAt { path, line: at.line() as usize }.error(format!("not a YAML list of rows: {message}"))
                }
                None => DatasetError::file(path, format!("not a YAML list of rows: {message}")),
            }
        })?;
    for row in rows {
        let at = RowAt { path, line: row.referenced.line() as usize };
        let Value::Object(fields) = row.value else {
            return Err(at.error(format!(
                "a row is a mapping (its variables, or name/vars/expected/checks), not {}",
                kind(&row.value)
            )));
        };
        take(fields, Cells::Json, at)?;
    }
    Ok(())
}
