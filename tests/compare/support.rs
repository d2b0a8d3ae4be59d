//! Helpers: sample prompts, side specs built as `tunebench compare` builds them, fixtures.

use std::path::{Path, PathBuf};

use tunebench::cli::input::prompt_setup;
use tunebench::compare::{twin_of, SideSpec};
use tunebench::output::ResponseType;
use tunebench::prompt::file::PromptFile;
use tunebench::run::Reading;

/// `sample-prompts/<name>.toml`.
pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-prompts").join(format!("{name}.toml"))
}

/// A file under `tests/fixtures/`.
pub fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

/// The side a prompt file makes, labelled `label`.
pub fn spec(label: &str, prompt: PromptFile, path: &Path) -> SideSpec {
    let setup = prompt_setup(&prompt, path, None).expect("setup");
    SideSpec {
        label: label.to_string(),
        path: path.to_path_buf(),
        base_dir: path.parent().expect("dir").to_path_buf(),
        reading: Reading { response_type: setup.response_type, profile: setup.profile, check: setup.check },
        item_check: setup.item_check,
        prompt,
    }
}

/// `[json twin, jsonl prompt]` of the sample jsonl prompt `name`, as `compare PROMPT --types json,jsonl`.
pub fn twin_sides(name: &str) -> [SideSpec; 2] {
    let path = sample(name);
    let prompt = PromptFile::load(&path).expect("prompt");
    let twin = twin_of(&prompt, path.parent().expect("dir"), ResponseType::Json).expect("twin");
    [spec("json", twin.prompt, &path), spec("jsonl", prompt, &path)]
}
