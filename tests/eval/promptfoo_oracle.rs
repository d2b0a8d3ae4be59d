//! promptfoo is the oracle: every config of tests/fixtures/promptfoo_oracle/ (promptfoo's own examples
//! and configs written as its docs write them) was run by promptfoo 0.123.1 against a scripted server
//! (`generate.sh`), and its verdict of every cell kept in `expected.json`. Here tunebench runs the same
//! configs against the same answers (`oracle_server`) and every cell must get promptfoo's verdict and
//! each assertion promptfoo's pass or fail, except the differences listed in [`DIFFERENCES`] (the
//! table "where tunebench differs from promptfoo" in docs/promptfoo.md), which must still differ:
//! the list is exact. A config tunebench does not run must say why at a `file:line`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tunebench::eval::score::Verdict;

use super::oracle_server;
use super::support::{stderr, tunebench};

/// Where tunebench differs from promptfoo on purpose, by config folder and cell
/// (`test description · column`, or `*` for every cell of the config), with why. docs/promptfoo.md
/// holds the same table.
const DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "09-claude-vs-gpt",
        "*",
        "`cost`: tunebench keeps no price table, so a cost assertion is not evaluated and its cell is an error (never a silent pass)",
    ),
    ("29-cost-latency", "*", "`cost`, as above"),
    (
        "11-chat-messages-wrapper",
        "*",
        "a prompt file holding `messages:` is read as those messages; promptfoo 0.123.1 sends the mapping itself",
    ),
    (
        "21-string-asserts",
        "regex · {{q}} · openai:chat:gpt-4o-mini",
        "`regex` is Rust's syntax: `(?i)` sets a flag where JavaScript refuses the pattern",
    ),
    ("33-text-metrics", "*", "rouge-n, bleu, gleu, meteor, word-count, is-refusal are not evaluated: error cells"),
    ("34-markup-asserts", "*", "is-xml, contains-xml, is-html, contains-html, is-sql, contains-sql are not evaluated: error cells"),
    ("35-model-graded", "*", "factuality and model-graded-closedqa are not evaluated: error cells"),
    ("36-assert-sets", "*", "assert-set, select-best and max-score are refused at their line"),
];

/// The corpus's folder.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/promptfoo_oracle")
}

/// `from` copied into `to` with the servers' addresses put in place of `__SERVER__` and `__GRADER__`.
fn copy_with_servers(from: &Path, to: &Path, server: &str, grader: &str) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_with_servers(&entry.path(), &target, server, grader);
            continue;
        }
        let bytes = std::fs::read(entry.path()).unwrap();
        match String::from_utf8(bytes) {
            Ok(text) => {
                std::fs::write(&target, text.replace("__SERVER__", server).replace("__GRADER__", grader)).unwrap()
            }
            Err(raw) => std::fs::write(&target, raw.into_bytes()).unwrap(),
        }
    }
}

/// `tunebench eval FILE --json` in `dir`, with the environment generate.sh gives promptfoo.
fn eval_in(
    dir: &Path,
    data: &Path,
    main: &tunebench::provider::wire_server::WireServer,
    file: &str,
) -> std::process::Output {
    tunebench(data)
        .current_dir(dir)
        .args(["eval", file, "--json", "--no-cache", "--no-fetch"])
        .env("OPENAI_BASE_URL", format!("{}/v1", main.url()))
        .env("OPENAI_API_KEY", "sk-oracle-env")
        .env("ORACLE_API_KEY", "sk-oracle-var")
        .env("ORACLE_GRADER_KEY", "sk-oracle-grader")
        .output()
        .unwrap()
}

/// What promptfoo said of one cell, and what tunebench said of it.
#[derive(Debug)]
struct Compared {
    cell: String,
    promptfoo: String,
    tunebench: String,
}

/// promptfoo's verdict of a cell in tunebench's words.
fn promptfoo_verdict(cell: &Value) -> &'static str {
    match (cell["pass"].as_bool(), cell["failureReason"].as_u64()) {
        (Some(true), _) => "pass",
        (_, Some(2)) => "error",
        _ => "fail",
    }
}

fn verdict_name(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Truncated => "truncated",
        Verdict::Error => "error",
    }
}

/// Runs one config and compares its cells; `Err` is why tunebench did not run it.
fn run_config(folder: &Path) -> Result<Vec<Compared>, String> {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("expected.json")).unwrap()).unwrap();
    let entries: Vec<oracle_server::Entry> =
        serde_json::from_str(&std::fs::read_to_string(folder.join("answers.json")).unwrap()).unwrap();
    let (_main_runtime, main) = oracle_server::start(entries.clone());
    let (_grader_runtime, grader) = oracle_server::start(entries);
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("config");
    copy_with_servers(folder, &work, &main.url(), &grader.url());
    let data = dir.path().join("data");
    let output = eval_in(&work, &data, &main, "promptfooconfig.yaml");
    if output.status.code() == Some(2) {
        return Err(stderr(&output));
    }
    let record: tunebench::eval::EvalRecord = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("no record ({e}), exit {:?}: {}", output.status.code(), stderr(&output)))?;
    let config = tunebench::promptfoo::read(&work.join("promptfooconfig.yaml")).map_err(|e| e.to_string())?;
    let imported = import_differences(&work, &data, &main, &record);
    let (prompts, providers) = (config.prompts.len(), config.providers.len());
    let repeat = config.repeat.max(1) as u64;
    // Which of tunebench's tests is promptfoo's cell: the same variables (and description, where it
    // has one), the n-th such cell the n-th such test.
    let mut taken: BTreeMap<(usize, usize, u64), usize> = BTreeMap::new();
    let mut compared = Vec::new();
    for cell in expected["cells"].as_array().unwrap() {
        let column_index = cell["promptIdx"].as_u64().unwrap() as usize;
        let (provider, prompt) = (column_index / prompts, column_index % prompts);
        let column = prompt * providers + provider;
        let test_index = cell["test"].as_u64().unwrap();
        let repeat_of = test_index % repeat;
        let description = cell["description"].as_str();
        let same_vars: Vec<usize> = config
            .tests
            .iter()
            .enumerate()
            .filter(|(_, t)| same_vars(&t.vars, &cell["vars"]))
            .map(|(i, _)| i)
            .collect();
        let described: Vec<usize> = same_vars
            .iter()
            .copied()
            .filter(|i| description.is_some_and(|d| config.tests[*i].name.starts_with(d)))
            .collect();
        let candidates = if described.is_empty() { same_vars } else { described };
        let slot = taken.entry((column, candidates.first().copied().unwrap_or(usize::MAX), repeat_of)).or_insert(0);
        let Some(&test) = candidates.get(*slot) else {
            compared.push(Compared {
                cell: format!("test {test_index} · column {column}"),
                promptfoo: promptfoo_verdict(cell).to_string(),
                tunebench: "no such test".to_string(),
            });
            continue;
        };
        *slot += 1;
        let name = &config.tests[test].name;
        let label = format!("{name} · {}", record.column_label(column));
        let row = record.rows.iter().position(|r| r.as_deref() == Some(name.as_str()));
        let ours = row.and_then(|row| {
            record.cells.iter().find(|c| c.row == row && c.column == column && u64::from(c.repeat) == repeat_of + 1)
        });
        let Some(ours) = ours else {
            compared.push(Compared {
                cell: label,
                promptfoo: promptfoo_verdict(cell).to_string(),
                tunebench: "not run".to_string(),
            });
            continue;
        };
        let theirs: Vec<String> = cell["assertions"]
            .as_array()
            .map(|all| all.iter().map(|a| if a["pass"] == true { "✓" } else { "✗" }.to_string()).collect())
            .unwrap_or_default();
        let mine: Vec<String> = ours
            .score
            .checks
            .iter()
            .map(|c| {
                if c.not_evaluated {
                    "?"
                } else if c.passed {
                    "✓"
                } else {
                    "✗"
                }
                .to_string()
            })
            .collect();
        let promptfoo = format!("{} [{}]", promptfoo_verdict(cell), theirs.join(""));
        let verdict = verdict_name(ours.score.verdict);
        // An error cell's assertions are not compared (promptfoo runs none; tunebench may have some).
        let tunebench = if verdict == "error" || promptfoo_verdict(cell) == "error" {
            format!("{verdict} [{}]", if promptfoo_verdict(cell) == "error" { theirs.join("") } else { mine.join("") })
        } else {
            format!("{verdict} [{}]", mine.join(""))
        };
        compared.push(Compared { cell: label, promptfoo, tunebench: format!("{tunebench} {}", ours.score.reason) });
    }
    compared.extend(imported);
    Ok(compared)
}

/// The same config imported (`import promptfoo --out suite`) and its suite evaluated: every cell must
/// have the verdict and the assertions' results of the config's own eval (`direct`).
fn import_differences(
    work: &Path,
    data: &Path,
    main: &tunebench::provider::wire_server::WireServer,
    direct: &tunebench::eval::EvalRecord,
) -> Vec<Compared> {
    let imported = tunebench(data)
        .current_dir(work)
        .args(["import", "promptfoo", "promptfooconfig.yaml", "--out", "suite"])
        .output()
        .unwrap();
    let failed = |why: String| vec![Compared { cell: "import".into(), promptfoo: "imported".into(), tunebench: why }];
    if !imported.status.success() {
        return failed(format!("import failed: {}", stderr(&imported)));
    }
    let output = eval_in(&work.join("suite"), data, main, "suite.toml");
    let Ok(suite) = serde_json::from_slice::<tunebench::eval::EvalRecord>(&output.stdout) else {
        return failed(format!(
            "the suite's eval gave no record (exit {:?}): {}",
            output.status.code(),
            stderr(&output)
        ));
    };
    let account = |record: &tunebench::eval::EvalRecord, cell: &tunebench::eval::record::CellRecord| {
        let checks: String = cell
            .score
            .checks
            .iter()
            .map(|c| {
                if c.not_evaluated {
                    '?'
                } else if c.passed {
                    '✓'
                } else {
                    '✗'
                }
            })
            .collect();
        format!("{} [{checks}]", verdict_name(cell.score.verdict))
            + &format!(" {} · {}", record.row_name(cell.row), record.column_label(cell.column))
    };
    let mut differences = Vec::new();
    for cell in &direct.cells {
        let (row, column) = (direct.row_name(cell.row), direct.column_label(cell.column));
        let theirs = suite.cells.iter().find(|c| {
            suite.row_name(c.row) == row && suite.column_label(c.column) == column && c.repeat == cell.repeat
        });
        let ours = account(direct, cell);
        let imported = theirs.map_or_else(|| "not run".to_string(), |c| account(&suite, c));
        if ours != imported {
            differences.push(Compared {
                cell: format!("import: {row} · {column}"),
                promptfoo: ours,
                tunebench: format!("{imported} (from the imported suite)"),
            });
        }
    }
    if suite.cells.len() != direct.cells.len() {
        differences.push(Compared {
            cell: "import: cells".into(),
            promptfoo: direct.cells.len().to_string(),
            tunebench: suite.cells.len().to_string(),
        });
    }
    differences
}

/// Whether tunebench's variables are promptfoo's: the same names, and the same values but where
/// promptfoo's record keeps a `file://` name for what tunebench read from the file.
fn same_vars(ours: &serde_json::Map<String, Value>, theirs: &Value) -> bool {
    let Some(theirs) = theirs.as_object() else { return ours.is_empty() };
    ours.len() == theirs.len()
        && theirs.iter().all(|(name, value)| {
            value.as_str().is_some_and(|v| v.starts_with("file://")) || ours.get(name) == Some(value)
        })
}

/// Whether the two accounts of a cell agree (the reason after tunebench's verdict is for reading).
fn agree(c: &Compared) -> bool {
    c.tunebench.split(" ").take(2).collect::<Vec<_>>().join(" ") == c.promptfoo
}

#[test]
fn every_cell_of_the_corpus_gets_promptfoos_verdict() {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    folders.sort();
    assert!(folders.len() >= 30, "the corpus holds {} configs", folders.len());
    let only = std::env::var("ORACLE_ONLY").ok();
    let mut report = Vec::new();
    let mut found = Vec::new();
    for folder in &folders {
        let name = folder.file_name().unwrap().to_string_lossy().into_owned();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(folder.join("expected.json")).unwrap()).unwrap();
        match run_config(folder) {
            Err(why) => {
                // promptfoo ran none of its cells either: agreed.
                if expected["cells"].as_array().is_some_and(Vec::is_empty) {
                    continue;
                }
                // A refusal names where: a config's line, a tests file's row, a prompt's template line.
                let placed = [".yaml:", ".csv:", ".jsonl:", ".json:", " line "].iter().any(|at| why.contains(at));
                let place = if placed { "" } else { " (NAMES NO PLACE)" };
                found.push((name.clone(), "*".to_string()));
                report.push(format!("{name}: refused{place}: {}", why.trim()));
            }
            Ok(cells) => {
                for cell in cells.iter().filter(|c| !agree(c)) {
                    found.push((name.clone(), cell.cell.clone()));
                    report.push(format!(
                        "{name}: {}: promptfoo {} · tunebench {}",
                        cell.cell, cell.promptfoo, cell.tunebench
                    ));
                }
            }
        }
    }
    let listed: Vec<(String, String)> = DIFFERENCES
        .iter()
        .filter(|(config, _, _)| only.as_deref().is_none_or(|o| config.contains(o)))
        .map(|(config, cell, _)| (config.to_string(), cell.to_string()))
        .collect();
    let unlisted: Vec<&String> = found
        .iter()
        .zip(&report)
        .filter(|(f, _)| !listed.iter().any(|l| l.0 == f.0 && (l.1 == "*" || l.1 == f.1)))
        .map(|(_, r)| r)
        .collect();
    let stale: Vec<&(String, String)> =
        listed.iter().filter(|l| !found.iter().any(|f| f.0 == l.0 && (l.1 == "*" || l.1 == f.1))).collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "{} cells differ from promptfoo and are not listed:\n{}\n\nlisted but agreeing now: {stale:?}",
        unlisted.len(),
        unlisted.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}
