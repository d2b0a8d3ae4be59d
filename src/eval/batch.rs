//! A provider batch's imported answers scored as an eval: each run record (from `batch::import`) is
//! a cell, its column the exported prompt × model, its row the case; each scored against its case's
//! expectations in the prompt as exported (the manifest's copy), as a live eval scores it.
//! [`score_results`] is `eval --batch`'s last step: a fetched batch's result lines imported, kept
//! in the history, and scored.

use std::collections::HashMap;

use super::plan::{Column, PromptText};
use super::record::{CellRecord, EvalRecord, RunBrief, FORMAT};
use super::score::{score_record, Expectations};
use super::EvalError;
use crate::batch::manifest::Manifest;
use crate::prompt::file::PromptFile;
use crate::run::record::now_ms;
use crate::run::RunRecord;

/// A fetched batch imported and scored.
pub struct Scored {
    pub imported: crate::batch::import::Imported,
    /// The eval (not yet saved).
    pub record: EvalRecord,
    /// Why the runs could not be added to the history, when they could not.
    pub history_error: Option<String>,
}

/// The result lines `results` of the batch `manifest` describes, imported as run records (each kept
/// as `history` says, as a live eval keeps its runs) and scored as an eval.
pub async fn score_results(
    manifest: &Manifest,
    results: &str,
    history: &crate::run::job::History,
) -> Result<Scored, EvalError> {
    let imported = crate::batch::import::import(manifest, results).await;
    let mut history_error = None;
    for run in &imported.records {
        if let Err(error) = crate::run::job::keep(run, history) {
            history_error = Some(error.to_string());
            break;
        }
    }
    let record = record_of_import(manifest, &imported.records)?;
    Ok(Scored { imported, record, history_error })
}

/// The eval record of the runs imported from the batch `manifest` describes. Expectations that do not
/// read (a bad expected file) are an error naming the prompt and case.
pub fn record_of_import(manifest: &Manifest, records: &[RunRecord]) -> Result<EvalRecord, EvalError> {
    let started_at_ms = now_ms();
    let prompts: Vec<PromptFile> = manifest
        .prompts
        .iter()
        .map(|p| p.prompt_file().map_err(|e| EvalError::Input(format!("{e:#}"))))
        .collect::<Result<_, _>>()?;
    let entries: HashMap<&str, &crate::batch::manifest::Entry> =
        manifest.entries.iter().map(|e| (e.custom_id.as_str(), e)).collect();
    let mut columns: Vec<Column> = Vec::new();
    let mut column_of: HashMap<(usize, String, String, crate::provider::StructuredMode), usize> = HashMap::new();
    let mut rows: Vec<Option<String>> = Vec::new();
    let mut expectations: HashMap<(usize, Option<String>), Expectations> = HashMap::new();
    let mut cells = Vec::new();
    for record in records {
        let Some(entry) = record.batch.as_deref().and_then(|id| entries.get(id)) else { continue };
        let (Some(prompt), Some(exported)) = (prompts.get(entry.prompt), manifest.prompts.get(entry.prompt)) else {
            continue;
        };
        let settings = &entry.settings;
        let key = (entry.prompt, settings.provider.name().to_string(), settings.model.clone(), settings.structured);
        let column = *column_of.entry(key).or_insert_with(|| {
            columns.push(column(manifest, prompt, exported, settings));
            columns.len() - 1
        });
        let case = if entry.prompt_case { entry.case.clone() } else { None };
        let row_name = entry.case.clone();
        let row = match rows.iter().position(|r| *r == row_name) {
            Some(row) => row,
            None => {
                rows.push(row_name.clone());
                rows.len() - 1
            }
        };
        let wanted = (entry.prompt, case.clone());
        let expected = match expectations.entry(wanted) {
            std::collections::hash_map::Entry::Occupied(found) => found.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let base_dir = crate::run::setup::base_dir(&exported.path);
                let found = Expectations::for_case(prompt, &base_dir, case.as_deref())
                    .map_err(|e| EvalError::Input(format!("batch {}: {e}", manifest.tag)))?;
                slot.insert(found)
            }
        };
        let score = score_record(expected, record);
        let own = case.as_deref().and_then(|name| prompt.cases.iter().find(|c| c.name == name));
        let run = RunBrief::of(record).with_case(own);
        cells.push(CellRecord { row, column, repeat: 1, case: row_name, score, run });
    }
    label_columns(&mut columns);
    cells.sort_by_key(|c| (c.row, c.column));
    let mut record = EvalRecord {
        eval: FORMAT,
        id: super::store::new_id(started_at_ms),
        started_at_ms,
        duration_ms: 0,
        prompts: manifest
            .prompts
            .iter()
            .zip(&prompts)
            .map(|(exported, prompt)| PromptText {
                path: exported.path.clone(),
                id: prompt.id.clone(),
                text: exported.toml.clone(),
            })
            .collect(),
        columns,
        rows,
        repeat: 1,
        cells,
        totals: Vec::new(),
        groups: Vec::new(),
        cancelled: false,
        batch: Some(manifest.tag.clone()),
        delta: None,
    };
    record.sum_up();
    Ok(record)
}

/// The columns an eval of the batch `manifest` exports has (each prompt × model × structured mode its
/// entries name, in their order), before any result is in: what its baseline is looked up by.
pub fn columns_of(manifest: &Manifest) -> Result<Vec<Column>, EvalError> {
    let prompts: Vec<PromptFile> = manifest
        .prompts
        .iter()
        .map(|p| p.prompt_file().map_err(|e| EvalError::Input(format!("{e:#}"))))
        .collect::<Result<_, _>>()?;
    let mut columns: Vec<Column> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in &manifest.entries {
        let (Some(prompt), Some(exported)) = (prompts.get(entry.prompt), manifest.prompts.get(entry.prompt)) else {
            continue;
        };
        let settings = &entry.settings;
        if seen.insert((
            entry.prompt,
            settings.provider.name().to_string(),
            settings.model.clone(),
            settings.structured,
        )) {
            columns.push(column(manifest, prompt, exported, settings));
        }
    }
    label_columns(&mut columns);
    Ok(columns)
}

/// The column of `prompt` (exported as `exported`) on `settings`.
fn column(
    manifest: &Manifest,
    prompt: &PromptFile,
    exported: &crate::batch::manifest::Exported,
    settings: &crate::run::RunSettings,
) -> Column {
    Column {
        label: String::new(),
        prompt: prompt.id.clone(),
        path: exported.path.clone(),
        response_type: prompt.response_type,
        twin: false,
        provider: manifest.engine.provider().to_string(),
        model: settings.model.clone(),
        base_url: None,
        structured: Some(settings.structured),
    }
}

/// Labels: the prompt's id, with the model when the batch holds several models.
fn label_columns(columns: &mut [Column]) {
    let several = columns.iter().any(|c| c.model != columns[0].model);
    for column in columns.iter_mut() {
        column.label =
            if several { format!("{} · {}", column.prompt, column.model_label()) } else { column.prompt.clone() };
    }
}
