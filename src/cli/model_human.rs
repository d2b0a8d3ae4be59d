//! `tunebench model list`'s table: a row per model found (name, family, parameters, quantisation,
//! size, "runs here" or why not), columns as wide as their widest cell.

use crate::run::models::FoundModel;

/// Size on disk as people read it: `253 MB`, `1.6 GB`, `980 kB`.
pub fn size_shown(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{} MB", (b as f64 / 1e6).round()),
        b if b >= 1_000 => format!("{} kB", (b as f64 / 1e3).round()),
        b => format!("{b} B"),
    }
}

/// The table, a line per model, or a line saying none was found and where it looked.
pub fn table(found: &[FoundModel]) -> String {
    if found.is_empty() {
        return "no GGUF models found (looked in the cache's models folder and Ollama's store; \
                `tunebench model fetch` gets the default one)\n"
            .into();
    }
    let header = ["MODEL", "FAMILY", "PARAMS", "QUANT", "SIZE", "RUNS HERE"].map(String::from);
    let rows: Vec<[String; 6]> = found
        .iter()
        .map(|m| {
            [
                m.name.clone(),
                m.family.clone().unwrap_or_else(|| "?".into()),
                m.parameters_shown(),
                m.quantisation.clone().unwrap_or_else(|| "?".into()),
                m.bytes.map_or_else(|| "?".into(), size_shown),
                if m.runs_here { "yes".into() } else { format!("no: {}", m.verdict()) },
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().chain([&header]).map(|r| r[i].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..5).map(width).collect();
    let line = |row: &[String; 6]| {
        let mut text = String::new();
        for (cell, w) in row.iter().zip(&widths) {
            text.push_str(&format!("{cell:<w$}  "));
        }
        text.push_str(&row[5]);
        text.push('\n');
        text
    };
    std::iter::once(&header).chain(&rows).map(line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        let shown = [253_000_000, 1_600_000_000, 980_400, 12].map(size_shown);
        assert_eq!(shown, ["253 MB", "1.6 GB", "980 kB", "12 B"]);
    }
}
