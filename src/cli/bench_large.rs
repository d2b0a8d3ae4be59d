//! (feature `testing`) `tunebench bench`'s large eval: `tunebench eval` as a process on an N-case
//! JSONL dataset (20,000 rows by default) against an in-process OpenAI-compatible server, with the eval
//! record and a JUnit report written: its wall time, cases per second and peak memory (the kernel's
//! high-water mark of the process's resident set, `VmHWM`, read until it exits), beside the same eval
//! on a hundredth of the rows as the baseline, so what each case adds is its own figure.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::eval::bench::{answer, prompt_text};
use crate::eval::bench_scale::dataset_text;
use crate::provider::wire_server::{Reply, WireServer};

/// The large eval's figures.
#[derive(Debug, Serialize)]
pub struct LargeFigures {
    pub cases: usize,
    pub wall_ms: f64,
    pub cases_per_second: f64,
    /// The eval process's peak resident memory.
    pub peak_mb: f64,
    /// The baseline: the same eval on a hundredth of the rows (its fixed cost: the process, the
    /// runtime, the client).
    pub small_cases: usize,
    pub small_peak_mb: f64,
    /// What each further case adds to the peak: (peak − small peak) / (cases − small cases).
    pub kb_per_case: f64,
    /// Requests the server answered (every case asked once).
    pub requests: usize,
    /// Test cases in the JUnit report written by `-o`.
    pub junit_cases: usize,
    /// Bytes of the eval record saved in the data directory.
    pub record_bytes: u64,
}

/// One eval as a process: its wall time, peak resident memory (kB) and the record's size.
struct Ran {
    wall_ms: f64,
    peak_kb: u64,
    record_bytes: u64,
}

/// Runs the large eval and its baseline in `dir`.
pub fn measure(dir: &Path, cases: usize) -> anyhow::Result<LargeFigures> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let server = runtime.block_on(WireServer::start_handler(|received| {
        let case = received.body.split("MARK-").nth(1).and_then(|rest| rest.split("-END").next());
        let i = case.and_then(|i| i.parse::<usize>().ok()).unwrap_or(0);
        Reply::chat_stream(&answer(i), "stop", Some((40, 60)))
    }))?;
    let base_url = format!("{}/v1", server.url());
    let small_cases = (cases / 100).max(1);
    let small = eval(dir, small_cases, &base_url)?;
    let asked = server.received().len();
    let large = eval(dir, cases, &base_url)?;
    let junit_cases =
        std::fs::read_to_string(dir.join(format!("bench-large-{cases}.xml")))?.matches("<testcase ").count();
    anyhow::ensure!(junit_cases == cases, "the JUnit report has {junit_cases} of {cases} cases");
    let (peak_mb, small_peak_mb) = (large.peak_kb as f64 / 1024.0, small.peak_kb as f64 / 1024.0);
    Ok(LargeFigures {
        cases,
        wall_ms: large.wall_ms,
        cases_per_second: cases as f64 / (large.wall_ms / 1000.0).max(1e-9),
        peak_mb,
        small_cases,
        small_peak_mb,
        kb_per_case: (large.peak_kb as f64 - small.peak_kb as f64) / (cases.saturating_sub(small_cases).max(1)) as f64,
        requests: server.received().len() - asked,
        junit_cases,
        record_bytes: large.record_bytes,
    })
}

/// `tunebench eval` on a dataset of `cases` rows, in its own data and cache directories.
fn eval(dir: &Path, cases: usize, base_url: &str) -> anyhow::Result<Ran> {
    let exe = std::env::current_exe()?;
    let prompt = dir.join(format!("bench-large-{cases}.toml"));
    std::fs::write(&prompt, format!("cases_file = \"bench-large-{cases}.jsonl\"\n{}", prompt_text(0)))?;
    std::fs::write(dir.join(format!("bench-large-{cases}.jsonl")), dataset_text(cases))?;
    let data = dir.join(format!("large-data-{cases}"));
    let out = std::fs::File::create(dir.join(format!("bench-large-{cases}.out")))?;
    let started = Instant::now();
    let cache = dir.join(format!("large-cache-{cases}"));
    let child = super::bench_eval::eval_command(&exe, &prompt, base_url, &data, &cache)
        .arg("-o")
        .arg(dir.join(format!("bench-large-{cases}.xml")))
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()?;
    let (status, peak_kb, stderr) = watch(child)?;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    // Half the cases fail by design (exit 1; a single case passes: 0); anything else is a broken measurement.
    anyhow::ensure!(matches!(status, Some(0 | 1)), "tunebench eval ended {status:?}: {stderr}");
    let record_bytes = std::fs::read_dir(data.join("evals"))?
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|meta| meta.len())
        .max()
        .unwrap_or(0);
    anyhow::ensure!(record_bytes > 0, "no eval record was saved");
    Ok(Ran { wall_ms, peak_kb, record_bytes })
}

/// Waits for `child`, reading its resident high-water mark (kB) every millisecond until it exits; the
/// mark only grows, so the last reading is the peak up to the last millisecond of its life.
fn watch(mut child: Child) -> anyhow::Result<(Option<i32>, u64, String)> {
    let status_file = format!("/proc/{}/status", child.id());
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(stderr) = stderr.as_mut() {
            let _ = std::io::Read::read_to_string(stderr, &mut text);
        }
        text
    });
    let mut peak = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            peak = peak.max(high_water_kb(&text).unwrap_or(0));
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let stderr = reader.join().unwrap_or_default();
    Ok((status.code(), peak, stderr))
}

/// `VmHWM` of a `/proc/PID/status` text, in kB.
fn high_water_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The figures as the human report prints them.
pub fn human(f: &LargeFigures) -> String {
    format!(
        "large eval: `tunebench eval` on a {}-row JSONL dataset against a local server, record and JUnit written\n\
         \x20 {:>9.1} ms   {:>7.0} cases/s   peak memory {:>6.1} MB  (baseline, the same eval on {} rows: {:.1} MB; \
         each further case {:.1} kB)\n",
        f.cases, f.wall_ms, f.cases_per_second, f.peak_mb, f.small_cases, f.small_peak_mb, f.kb_per_case
    )
}

#[cfg(test)]
mod tests {
    use super::high_water_kb;

    #[test]
    fn the_high_water_mark_is_read_from_the_status_text() {
        let status = "Name:\ttunebench\nVmPeak:\t  200000 kB\nVmHWM:\t   51234 kB\nVmRSS:\t   40000 kB\n";
        assert_eq!(high_water_kb(status), Some(51234));
        assert_eq!(high_water_kb("Name:\tx\n"), None);
    }
}
