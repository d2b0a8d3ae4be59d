//! What an eval plan holds per dataset row, counted by this binary's allocator (bytes live, not the
//! process's memory, and no clock): the plan indexes a dataset (each row's name and where it is) and
//! reads a row again when its cell runs, so a row costs the plan a few hundred bytes whatever the row
//! holds, not its variables and expected answer.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests state what they expect by panicking

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

/// The system allocator, counting the bytes live that this thread allocated.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(bytes: isize) {
    // `try_with`: a thread being torn down has no counter left, and counts nothing.
    let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
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
