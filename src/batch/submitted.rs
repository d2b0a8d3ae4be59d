//! A submitted batch remembered by its provider's id (`<data dir>/batches/submitted/<id>.json`): the
//! tag of its manifest, its engine, base URL and key variable (a name, never the key), so
//! `eval --batch-resume ID` reaches the same endpoints and scores against the same manifest.

use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::run::history;

/// What `eval --batch` submitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    /// The provider's batch id.
    pub id: String,
    /// The tag of the batch's manifest (kept in the data directory).
    pub tag: String,
    pub engine: Engine,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The variable the key is read from in place of the provider's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
}

impl Submitted {
    /// Where batch `id` is remembered.
    pub fn path(id: &str) -> anyhow::Result<PathBuf> {
        Ok(crate::names::inside(&history::data_dir()?.join("batches").join("submitted"), id, ".json"))
    }

    /// Remembers this batch (atomically).
    pub fn save(&self) -> anyhow::Result<PathBuf> {
        let path = Self::path(&self.id)?;
        if let Some(dir) = path.parent() {
            history::create_dir(dir).map_err(anyhow::Error::msg)?;
        }
        let text = serde_json::to_string(self)?;
        crate::prompt::file::write_atomic(&path, &text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// The batch submitted as `id` (`None`: not submitted from this data directory).
    pub fn find(id: &str) -> anyhow::Result<Option<Self>> {
        let path = Self::path(id)?;
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::files::read_text(&path, crate::files::MANIFEST)?;
        let found = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a submitted batch tunebench wrote", path.display()))?;
        Ok(Some(found))
    }
}
