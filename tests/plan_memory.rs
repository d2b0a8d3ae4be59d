//! What an eval plan holds per dataset row, counted by this binary's allocator (bytes live, not the
//! process's memory, and no clock): the plan indexes a dataset (each row's name and where it is) and
//! reads a row again when its cell runs, so a row costs the plan a few hundred bytes whatever the row
//! holds, not its variables and expected answer. A promptfoo config's tests are its columns' cases,
//! held once (not once more per column's prompt), and made without copying them twice more.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

/// The system allocator, counting the bytes live that this thread allocated.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most bytes live since it was last set to the bytes live then.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(bytes: isize) {
    // `try_with`: a thread being torn down has no counter left, and counts nothing.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + bytes);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

// SAFETY: every call is handed to the system allocator as it came; the counter only adds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: as `GlobalAlloc::realloc` requires, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const PROMPT: &str = r#"id = "memory"
response_type = "jsonl"
template = "Define: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}'''
[provider]
name = "openai"
model = "m"
base_url = "http://127.0.0.1:9/v1"
[eval]
match = "entity"
"#;

/// A dataset of `rows` rows, each with five expected items (as `bench --large-cases` writes them).
fn dataset(rows: usize) -> String {
    let mut text = String::new();
    for i in 0..rows {
        let items: Vec<serde_json::Value> = (0..5)
            .map(|k| serde_json::json!({"entity": format!("entity {i} {k}"), "definition": "A thing of some length."}))
            .collect();
        let row = serde_json::json!({"name": format!("case-{i}"), "text": format!("MARK-{i}-END"), "expected": items});
        text.push_str(&format!("{row}\n"));
    }
    text
}

/// The bytes a plan of a `rows`-row dataset holds once made (everything it allocated and kept).
fn plan_bytes(dir: &Path, rows: usize) -> isize {
    let prompt = dir.join(format!("memory-{rows}.toml"));
    std::fs::write(&prompt, format!("cases_file = \"memory-{rows}.jsonl\"\n{PROMPT}")).unwrap();
    std::fs::write(dir.join(format!("memory-{rows}.jsonl")), dataset(rows)).unwrap();
    let options = tunebench::eval::EvalOptions { prompts: vec![prompt], repeat: 1, ..Default::default() };
    let before = LIVE.with(Cell::get);
    let plan = tunebench::eval::EvalPlan::new(&options).unwrap();
    let held = LIVE.with(Cell::get) - before;
    assert_eq!(plan.cells.len(), rows);
    drop(plan);
    held
}

#[test]
fn a_plan_holds_a_few_hundred_bytes_per_dataset_row() {
    let dir = tempfile::tempdir().unwrap();
    // Once, so what is made once per process (the schema's meta-validators, …) is not counted.
    plan_bytes(dir.path(), 10);
    let (small, large) = (plan_bytes(dir.path(), 500), plan_bytes(dir.path(), 2500));
    let per_row = (large - small) / 2000;
    eprintln!("the plan holds {per_row} bytes per dataset row ({small} at 500 rows, {large} at 2,500)");
    // A row's file text alone is about 400 bytes; held as a case with its expectations it was 7 kB.
    assert!(per_row < 400, "the plan holds {per_row} bytes per dataset row ({small} at 500 rows, {large} at 2,500)");
}

/// A promptfoo config whose `tests` are a JSONL file of `tests` tests, each with two assertions.
fn promptfoo_config(dir: &Path, tests: usize) -> std::path::PathBuf {
    let mut lines = String::new();
    for i in 0..tests {
        let test = serde_json::json!({
            "description": format!("case {i}"),
            "vars": {"text": format!("MARK-{i}-END")},
            "assert": [{"type": "contains", "value": "entity"}, {"type": "icontains", "value": "thing"}],
        });
        lines.push_str(&format!("{test}\n"));
    }
    std::fs::write(dir.join(format!("tests-{tests}.jsonl")), lines).unwrap();
    let config = dir.join(format!("promptfooconfig-{tests}.yaml"));
    let yaml = format!(
        "prompts:\n  - 'Define: {{{{text}}}}'\nproviders:\n  - id: openai:chat:m\n    config:\n      apiBaseUrl: http://127.0.0.1:9/v1\ntests: file://tests-{tests}.jsonl\n"
    );
    std::fs::write(&config, yaml).unwrap();
    config
}

/// The bytes a plan of a promptfoo config of `tests` JSONL tests holds once made, and the most it
/// held while it was made (the config read, its columns set up).
fn promptfoo_plan_bytes(dir: &Path, tests: usize) -> (isize, isize) {
    let config = promptfoo_config(dir, tests);
    let options = tunebench::eval::EvalOptions { prompts: vec![config], repeat: 1, ..Default::default() };
    let before = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(before));
    let plan = tunebench::eval::EvalPlan::new(&options).unwrap();
    let (held, peak) = (LIVE.with(Cell::get) - before, PEAK.with(Cell::get) - before);
    assert_eq!(plan.cells.len(), tests);
    drop(plan);
    (held, peak)
}

#[test]
fn a_promptfoo_plan_holds_each_test_once() {
    let dir = tempfile::tempdir().unwrap();
    promptfoo_plan_bytes(dir.path(), 10);
    let (small, large) = (promptfoo_plan_bytes(dir.path(), 500), promptfoo_plan_bytes(dir.path(), 2500));
    let (held, peak) = ((large.0 - small.0) / 2000, (large.1 - small.1) / 2000);
    eprintln!("a promptfoo plan holds {held} bytes per test, {peak} at most while it is made");
    // A test with two assertions is about 1.8 kB as a case; the columns' prompts held it once more
    // (3.9 kB a test), and making them copied it twice more while the config's own was held.
    assert!(held < 2_500, "a promptfoo plan holds {held} bytes per test ({small:?} at 500 tests, {large:?} at 2,500)");
    assert!(peak < 5_000, "a promptfoo plan is made with {peak} bytes per test ({small:?} at 500, {large:?} at 2,500)");
}
