//! `eval -o FILE`: the format by the extension (each file read back by a parser), an unknown extension
//! refused before any model call, and the HTML report rendered by a real headless Chromium: the page
//! shows the record's numbers and verdicts, and hostile case names stay text.

use std::path::{Path, PathBuf};
use std::process::Command;

use tunebench::eval::report::verdict_name;
use tunebench::eval::EvalRecord;
use tunebench::provider::wire_server::WireServer;

use crate::support::*;

/// Every format at once: each file is the report its extension names, and `--junit` still writes.
#[test]
fn each_output_is_the_format_its_extension_names() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_WRONG);
    let out = |name: &str| dir.path().join(name);
    let names = ["r.json", "r.jsonl", "r.csv", "r.xml", "r.html"];
    let mut args: Vec<String> = vec!["--json".into(), "--junit".into(), out("j.xml").display().to_string()];
    for name in names {
        args.extend(["-o".to_string(), out(name).display().to_string()]);
    }
    let output = eval(dir.path(), &prompt, &server, &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let printed = record(&output);

    let written: EvalRecord = serde_json::from_str(&std::fs::read_to_string(out("r.json")).unwrap()).unwrap();
    assert_eq!(written, printed, "the .json report is the record --json prints");

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out("r.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), printed.cells.len(), "a line per cell");
    for (line, cell) in lines.iter().zip(&printed.cells) {
        assert_eq!(line["case_name"], printed.row_name(cell.row));
        assert_eq!(line["score"]["verdict"], verdict_name(cell.score.verdict));
        assert_eq!(line["eval"], printed.id.as_str());
    }

    let csv = std::fs::read_to_string(out("r.csv")).unwrap();
    assert!(csv.starts_with("case,column,prompt,"), "{csv}");
    assert_eq!(csv.lines().count(), 1 + printed.cells.len());
    let xml = std::fs::read_to_string(out("r.xml")).unwrap();
    assert_eq!(xml, std::fs::read_to_string(out("j.xml")).unwrap(), "-o .xml and --junit: one writer");
    assert!(xml.contains("<testsuites") && xml.contains("failures=\"1\""), "{xml}");
    let html = std::fs::read_to_string(out("r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("1 of 2 cells passed (50%)"), "{html}");
    assert!(html.contains("beta &lt;&amp;&quot;x&quot;&gt;, y"), "the case name escaped");
    assert!(
        !html.contains("<script") && !html.contains("http://") && !html.contains("https://"),
        "no script, no network"
    );
}

#[test]
fn an_unknown_extension_is_refused_before_any_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), PROMPT);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let html = dir.path().join("ok.html");
    for bad in ["report.pdf", "report"] {
        let bad = dir.path().join(bad);
        let output =
            eval(dir.path(), &prompt, &server, &["-o", html.to_str().unwrap(), "--output", bad.to_str().unwrap()]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{said}");
        assert!(said.contains(&bad.display().to_string()) && said.contains(".html"), "{said}");
        assert!(!bad.exists() && !html.exists(), "nothing written");
    }
    let said = stderr(&eval(dir.path(), &prompt, &server, &["-o", "x.PDF"]));
    assert!(said.contains("-o x.PDF: unknown report extension \".pdf\""), "{said}");
    assert!(server.received().is_empty(), "refused before anything ran");
}

/// A prompt whose case names are hostile: markup that would retitle the page if it ran, and an ESC
/// sequence; the third case's answer is cut off (`length`), so the page draws its truncation chart.
const HOSTILE: &str = r#"id = "definitions"
response_type = "jsonl"
template = "Define every entity in: {{text}}"
schema = '''{"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}'''

[eval]
match = "entity"

[[cases]]
name = "alpha"
variables = { text = "ALPHA-TEXT" }
[cases.expected]
items = [{ entity = "Alpha", definition = "The first letter." }]

[[cases]]
name = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
variables = { text = "BETA-TEXT" }
[cases.expected]
items = [
  { entity = "Beta", definition = "The second letter." },
  { entity = "Gamma", definition = "The third letter." },
]

[[cases]]
name = "esc \u001b[31mred\u001b]0;retitled\u0007"
variables = { text = "CUT-TEXT" }
[cases.expected]
items = [{ entity = "Delta", definition = "The fourth letter." }, { entity = "Epsilon", definition = "The fifth letter." }]
"#;

const CUT: &str = "{\"entity\": \"Delta\", \"definition\": \"The fourth letter.\"}\n{\"entity\": \"Epsilon\", \"defin";

fn hostile_server() -> (tokio::runtime::Runtime, WireServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let routes = vec![
        ("ALPHA-TEXT".to_string(), sse_answer(ALPHA_RIGHT, "stop")),
        ("BETA-TEXT".to_string(), sse_answer(BETA_WRONG, "stop")),
        ("CUT-TEXT".to_string(), sse_answer(CUT, "length")),
    ];
    let server = runtime.block_on(WireServer::start_routed(routes)).unwrap();
    (runtime, server)
}

/// Chromium from the system (Debian's `chromium`), or why the test cannot run.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|dir| Path::new(dir).join(name)).find(|path| path.is_file())
    })
}

/// `chromium --headless` on `page` with `args`: standard output (the DOM for `--dump-dom`).
fn headless(browser: &Path, page: &Path, profile: &Path, args: &[&str]) -> String {
    let output = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// The text between `start` (its first occurrence) and the next `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("{start} not in:\n{text}")) + start.len();
    let to = text[from..].find(end).unwrap() + from;
    &text[from..to]
}

#[test]
fn the_html_report_renders_in_a_real_browser_with_the_records_numbers() {
    let Some(browser) = chromium() else {
        // CI installs chromium and makes this test mandatory; a plain `cargo test` on a machine without
        // a browser skips it, and says so past the test harness's capture (straight to stderr).
        let how = "install Debian's chromium (apt-get install -y chromium) and run `cargo test` again";
        if std::env::var_os("TUNEBENCH_REQUIRE_BROWSER").is_some_and(|v| v == "1") {
            panic!("this test renders the HTML report in a real browser, and TUNEBENCH_REQUIRE_BROWSER=1: {how}");
        }
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** SKIPPED the_html_report_renders_in_a_real_browser_with_the_records_numbers: no chromium on PATH; {how} ***\n"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let prompt = prompt_in(dir.path(), HOSTILE);
    let (_runtime, server) = hostile_server();
    let page = dir.path().join("report.html");
    let output = eval(dir.path(), &prompt, &server, &["--json", "-o", page.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let record = record(&output);
    let verdicts: Vec<&str> = record.cells.iter().map(|c| verdict_name(c.score.verdict)).collect();
    assert_eq!(verdicts, ["pass", "fail", "truncated"]);

    let dom = headless(&browser, &page, &dir.path().join("profile"), &["--dump-dom"]);
    // Nothing from the record ran: the title is the report's, and the DOM has no script or image
    // element (the names are text nodes).
    assert_eq!(between(&dom, "<title>", "</title>"), format!("tunebench eval {}", record.id));
    assert!(!dom.contains("<script") && !dom.contains("<img"), "markup from the record became elements:\n{dom}");
    assert!(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x"), "{dom}");
    assert!(dom.contains("esc \\u{1b}[31mred\\u{1b}]0;retitled\\u{7}") && !dom.contains('\u{1b}'), "ESC shown as text");

    // The numbers shown are the record's: the pass rate, each column's, each case's verdict and F1.
    let totals = &record.totals[0];
    let summary = between(&dom, "id=\"summary\">", "</p>");
    let rate = format!("{:.0}%", totals.passed as f64 / totals.cells as f64 * 100.0);
    assert!(summary.contains(&format!("{} of {} cells passed ({rate})", totals.passed, totals.cells)), "{summary}");
    let column_rate = between(&dom, "class=\"num pass-rate\">", "</td>");
    assert_eq!(column_rate, format!("{:.0}%", totals.pass_rate * 100.0));
    let matrix = between(&dom, "id=\"matrix\">", "</table>");
    let rows: Vec<&str> = matrix.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), record.rows.len(), "{matrix}");
    for (row, group) in rows.iter().zip(&record.groups) {
        let verdict = verdict_name(group.verdict);
        let f1 = group.f1.map(|f| format!(" {f:.2}")).unwrap_or_default();
        assert!(row.contains(&format!("data-verdict=\"{verdict}\"")), "{row}");
        assert!(row.contains(&format!(">{verdict}{f1}</a>")), "{verdict}{f1} in {row}");
    }
    // The failure's differences, the answers, and the cut answer's chart.
    assert!(dom.contains("missing Gamma"), "beta's difference");
    assert!(dom.contains("The first letter."), "alpha's answer");
    let chart = between(&dom, "<figure class=\"truncation\">", "</figure>");
    assert!(chart.contains("<svg") && chart.contains("jsonl: 1 at the end"), "{chart}");

    // A screenshot renders too (kept when TUNEBENCH_KEEP_SCREENSHOT names a file, to look at).
    let png = dir.path().join("report.png");
    let shot = format!("--screenshot={}", png.display());
    headless(&browser, &page, &dir.path().join("profile"), &[&shot, "--window-size=1200,1600"]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "{} bytes", bytes.len());
    if let Some(keep) = std::env::var_os("TUNEBENCH_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// The HTML report shows each case's input variables, escaped, and its tables scroll in their own
/// boxes rather than widen the page.
#[test]
fn the_html_report_shows_each_cases_variables_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = PROMPT
        .replace("variables = { text = \"BETA-TEXT\" }", "variables = { text = \"BETA-TEXT <b>bold</b> & 'q'\" }");
    let prompt = prompt_in(dir.path(), &hostile);
    let (_runtime, server) = server(ALPHA_RIGHT, BETA_RIGHT);
    let page = dir.path().join("r.html");
    let output = eval(dir.path(), &prompt, &server, &["--json", "-o", page.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let record = record(&output);
    assert_eq!(record.cells[1].run.variables.get("text"), Some(&serde_json::json!("BETA-TEXT <b>bold</b> & 'q'")));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th>text</th><td><pre>ALPHA-TEXT</pre></td>"), "{html}");
    assert!(html.contains("<pre>BETA-TEXT &lt;b&gt;bold&lt;/b&gt; &amp; &#39;q&#39;</pre>"), "{html}");
    assert!(!html.contains("<b>bold"), "a variable's markup stays text");
    assert!(html.contains("<div class=\"scroll\"><table id=\"columns\">"), "the columns table scrolls in its own box");
}
