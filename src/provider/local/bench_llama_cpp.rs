//! The engine beside llama.cpp for `tunebench bench --vs-llama-cpp`: each model's GGUF run by both in
//! the same run (llama.cpp through llama-cpp-python, `benches/llama-cpp/run.py`), the same prompt
//! tokens, the same number of generated tokens, greedy, 2 threads, in alternating rounds; medians,
//! ours ÷ llama.cpp, and the memory one generated token reads against the file's tensor bytes and the
//! machine's memory read baseline; loading from the GGUF and from the stored weights (mapped) beside
//! reading the file once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::bench::{memory_read_gb_per_s, per_s, timed};
use super::{fetch, load_options, Engine, LoadOptions};
use crate::engine::model::WeightsFrom;
use crate::provider::Request;

/// Threads of both engines.
pub const THREADS: usize = 2;
/// The Python to run llama.cpp with (one that imports `llama_cpp`); else `python3` when it does.
pub const PYTHON_VAR: &str = "TUNEBENCH_LLAMA_CPP_PYTHON";
/// How to get llama-cpp-python (built from source for this CPU), as run.py's docstring says.
pub const PIP_LINE: &str = "CMAKE_ARGS=\"-DGGML_NATIVE=ON\" pip install --no-build-isolation \
                            llama-cpp-python==0.3.36 (with cmake, ninja and scikit-build-core installed)";
/// The script that runs llama.cpp on a workload file (given to the Python on its standard input).
const RUN_PY: &str = include_str!("../../../benches/llama-cpp/run.py");
/// The models, by the names `--vs-model` takes.
pub const MODELS: [&str; 3] = ["smollm2", "gemma-3-270m", QWEN3_RANDOM];
/// The random-weight Qwen3 with Qwen3-0.6B's shapes, made by `benches/llama-cpp/qwen3_06b.py`.
pub const QWEN3_RANDOM: &str = "qwen3-0.6b-random";
const QWEN3_RANDOM_FILE: &str = "qwen3-0.6b-random-q4_k_m.gguf";

/// One llama.cpp run as run.py prints it (one JSON object a line, llama.cpp's own timers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlamaCppRun {
    pub engine: String,
    pub threads: usize,
    pub prompt_tokens: usize,
    pub prompt_tokens_per_s: f64,
    pub prompt_ms: f64,
    /// Tokens evaluated after the prompt (the last generated one is not).
    pub tokens: usize,
    pub tokens_per_s: f64,
    /// Tokens generated.
    pub generated: usize,
    /// The model's load (`Llama(...)`), by the clock; absent from older lines.
    #[serde(default)]
    pub load_ms: f64,
}

/// The runs in run.py's standard output: every line that opens with `{` is one; other lines (a
/// library's notices) are passed over. An error names the line and what is wrong with it.
pub fn parse_runs(stdout: &str) -> Result<Vec<LlamaCppRun>, String> {
    let mut runs = Vec::new();
    for (n, line) in stdout.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let run: LlamaCppRun =
            serde_json::from_str(line).map_err(|e| format!("line {} of llama.cpp's output: {e}: {line}", n + 1))?;
        for (what, value) in [("prompt_tokens_per_s", run.prompt_tokens_per_s), ("tokens_per_s", run.tokens_per_s)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!("line {} of llama.cpp's output: {what} is {value}, not a speed: {line}", n + 1));
            }
        }
        runs.push(run);
    }
    if runs.is_empty() {
        let head: String = stdout.chars().take(300).collect();
        return Err(format!("llama.cpp's output has no run (no line is a JSON object): {head:?}"));
    }
    Ok(runs)
}

/// The Python that imports llama_cpp, and llama_cpp's version; or why there is none and how to get one.
pub fn find_python() -> Result<(String, String), String> {
    if let Some(python) = std::env::var(PYTHON_VAR).ok().filter(|p| !p.trim().is_empty()) {
        return imports_llama_cpp(&python).map(|version| (python.clone(), version)).map_err(|why| {
            format!("{PYTHON_VAR}={python}: {why}; point it at a Python with llama-cpp-python: {PIP_LINE}")
        });
    }
    imports_llama_cpp("python3").map(|version| ("python3".to_string(), version)).map_err(|why| {
        format!("no Python with llama-cpp-python ({PYTHON_VAR} is not set, and python3: {why}); set {PYTHON_VAR}, or install it: {PIP_LINE}")
    })
}

fn imports_llama_cpp(python: &str) -> Result<String, String> {
    let output = Command::new(python)
        .args(["-c", "import llama_cpp; print(llama_cpp.__version__)"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message").trim().to_string();
        return Err(format!("it does not import llama_cpp ({last})"));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The GGUF of `name` (one of [`MODELS`]), or why it is not there and how to get it.
pub fn model_path(name: &str) -> Result<PathBuf, String> {
    match name {
        QWEN3_RANDOM => {
            let cache = fetch::cache_dir().map_err(|e| e.to_string())?;
            let path = cache.join("models").join(QWEN3_RANDOM_FILE);
            if path.is_file() {
                Ok(path)
            } else {
                Err(format!(
                    "{} is not there: make it once with `python3 benches/llama-cpp/qwen3_06b.py {}` \
                     (gguf, numpy and llama-cpp-python; the Qwen vocabulary from \
                     `bash tests/fixtures/families/vocab.sh {}`)",
                    path.display(),
                    cache.display(),
                    cache.join("vocab").display()
                ))
            }
        }
        _ => {
            let known = fetch::known_or_error(name).map_err(|e| e.to_string())?;
            fetch::installed(known).map_err(|e| e.to_string())
        }
    }
}

/// Both engines' medians on one side.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub prompt_tokens_per_s: f64,
    pub tokens_per_s: f64,
}

/// One round: ours and llama.cpp, one after the other (the order swaps every round).
#[derive(Clone, Debug, Serialize)]
pub struct Round {
    pub ours: Side,
    pub llama_cpp: Side,
}

/// What one generated token reads, in bytes, and how fast that was read.
#[derive(Clone, Debug, Serialize)]
pub struct Read {
    /// Weights (as held) and keys and values (f16, every layer, at the average position).
    pub weights_bytes: u64,
    pub kv_bytes: u64,
    pub gb_per_s: f64,
}

/// One model beside llama.cpp.
#[derive(Clone, Debug, Serialize)]
pub struct ModelFigures {
    pub model: String,
    pub file: String,
    pub family: String,
    pub file_bytes: u64,
    /// Every tensor's bytes as stored in the file.
    pub tensor_bytes: u64,
    /// The file's tensors one generated token reads: all of them, less the embedding table when the
    /// file has an output matrix of its own (a token reads one row of it).
    pub token_tensor_bytes: u64,
    /// The weight matrices the engine holds and reads per token, ÷ the file's bytes a token reads.
    pub held_vs_file: f64,
    pub prompt_tokens: usize,
    pub generated_tokens: usize,
    /// Medians of the rounds.
    pub ours: Side,
    pub llama_cpp: Side,
    /// Ours ÷ llama.cpp.
    pub prompt_ratio: f64,
    pub generation_ratio: f64,
    pub ours_read: Read,
    /// llama.cpp reads the file's tensors as stored, and an f16 key/value cache of the same shape.
    pub llama_cpp_read: Read,
    /// [`THREADS`] threads at once summing a buffer the size of our weights (their shares of it),
    /// measured after the rounds: the most both could read a second.
    pub memory_read_gb_per_s: f64,
    pub load: Load,
    pub rounds: Vec<Round>,
}

/// Loading the model: from the GGUF (interleaving its weights and storing them), and at a later start
/// (the stored file mapped, its checksum read once), beside reading the GGUF's bytes once.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    pub rebuilt_ms: f64,
    pub mapped_ms: f64,
    /// llama.cpp's load of the same file (`Llama(...)`: mapped, its vocabulary, its context), median of the rounds.
    pub llama_cpp_ms: f64,
    pub read_file_once_ms: f64,
    pub file_bytes_read: u64,
    /// Bytes of block matrices read in place from the mapped file.
    pub mapped_bytes: usize,
    /// The process's file-backed bytes mapped on 2 MiB pages (`FilePmdMapped`; `None` where the kernel
    /// does not say).
    pub mapped_on_huge_pages: Option<u64>,
}

/// A model measured, or why not.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum ModelSection {
    Measured(Box<ModelFigures>),
    Skipped { model: String, skipped: String },
}

/// The section: the Python and llama.cpp used, and each model.
#[derive(Clone, Debug, Serialize)]
pub struct VsFigures {
    pub python: String,
    pub llama_cpp: String,
    pub threads: usize,
    pub rounds: usize,
    pub models: Vec<ModelSection>,
}

/// Runs `request` (greedy, unconstrained, its `max_tokens` the tokens to generate at most) on each of
/// `models` with our engine and llama.cpp through `python`, `rounds` times alternately.
pub fn measure(python: (String, String), models: &[String], request: &Request, rounds: usize) -> VsFigures {
    let models = models
        .iter()
        .map(|name| match model_path(name).and_then(|path| measure_model(&python.0, name, &path, request, rounds)) {
            Ok(figures) => ModelSection::Measured(Box::new(figures)),
            Err(skipped) => ModelSection::Skipped { model: name.clone(), skipped },
        })
        .collect();
    VsFigures { python: python.0, llama_cpp: python.1, threads: THREADS, rounds, models }
}

/// The file's tensor bytes, all and those a generated token reads.
fn tensor_bytes(path: &Path) -> Result<(u64, u64), String> {
    let (content, _) = crate::engine::gguf::open(path).map_err(|e| e.to_string())?;
    let bytes = |info: &candle_core::quantized::gguf_file::TensorInfo| {
        let dtype = info.ggml_dtype;
        (info.shape.elem_count() / dtype.block_size() * dtype.type_size()) as u64
    };
    let all: u64 = content.tensor_infos.values().map(bytes).sum();
    let untied = content.tensor_infos.contains_key("output.weight");
    let embeddings = content.tensor_infos.get("token_embd.weight").map_or(0, bytes);
    Ok((all, if untied { all - embeddings } else { all }))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn measure_model(
    python: &str,
    name: &str,
    path: &Path,
    request: &Request,
    rounds: usize,
) -> Result<ModelFigures, String> {
    let (tensor_bytes, token_tensor_bytes) = tensor_bytes(path)?;
    // What a user's later start runs: the weights interleaved once and stored (in a folder of this run's
    // own, so the load from the GGUF is timed and the user's stored weights are left as they are), then
    // mapped from that file.
    let folder = std::env::temp_dir().join(format!("tunebench-vs-llama-cpp-{}-{name}-weights", std::process::id()));
    let loaded = load_twice(path, &folder);
    let _ = std::fs::remove_dir_all(&folder);
    let (mut engine, load) = loaded?;
    let prompt = engine
        .prompt_text(request)
        .and_then(|text| engine.tokenizer().encode(&text).map_err(Into::into))
        .map_err(|e| e.to_string())?;
    let spec = std::env::temp_dir().join(format!("tunebench-vs-llama-cpp-{}-{name}.json", std::process::id()));
    let result = (|| {
        // A warm-up (threads started, pages touched), then the rounds.
        let mut warm = request.clone();
        warm.max_tokens = Some(8);
        timed(&mut engine, &warm).map_err(|e| e.to_string())?;
        let mut generated = None;
        let mut ours_runs = Vec::new();
        let mut llama_runs = Vec::new();
        let mut llama_loads = Vec::new();
        for round in 0..rounds {
            if round % 2 == 0 {
                ours_runs.push(ours_run(&mut engine, request, prompt.len(), &mut generated, round)?);
            }
            // llama.cpp generates as many tokens as we did (greedy, through an end of text).
            let want = generated.unwrap_or(request.max_tokens.unwrap_or(1024) as usize);
            let body = serde_json::json!({
                "model": path.display().to_string(),
                "prompt": prompt,
                "max_tokens": want,
                "n_ctx": prompt.len() + want + 64,
            });
            crate::prompt::file::write_atomic(&spec, &format!("{body}\n")).map_err(|e| e.to_string())?;
            let run = llama_cpp_run(python, &spec, path)?;
            if run.generated != want || run.prompt_tokens != prompt.len() {
                return Err(format!(
                    "llama.cpp ran {} prompt tokens and generated {}, asked {} and {want}",
                    run.prompt_tokens,
                    run.generated,
                    prompt.len()
                ));
            }
            llama_runs.push(Side { prompt_tokens_per_s: run.prompt_tokens_per_s, tokens_per_s: run.tokens_per_s });
            llama_loads.push(run.load_ms);
            if round % 2 == 1 {
                ours_runs.push(ours_run(&mut engine, request, prompt.len(), &mut generated, round)?);
            }
        }
        Ok((generated.unwrap_or(0), ours_runs, llama_runs, llama_loads))
    })();
    let _ = std::fs::remove_file(&spec);
    let (generated, ours_runs, llama_runs, llama_loads) = result?;
    let side = |runs: &[Side]| Side {
        prompt_tokens_per_s: median(runs.iter().map(|s| s.prompt_tokens_per_s).collect()),
        tokens_per_s: median(runs.iter().map(|s| s.tokens_per_s).collect()),
    };
    let (ours, llama_cpp) = (side(&ours_runs), side(&llama_runs));
    let c = engine.config();
    // Keys and values as f16, every layer; a token at position p reads p + 1 positions.
    let per_position = (c.layers * 2 * c.kv_heads * c.head_dim * 2) as f64;
    let kv_bytes = (per_position * (prompt.len() as f64 + generated as f64 / 2.0)) as u64;
    let held = engine.weight_bytes() as u64;
    let read = |weights_bytes: u64, tokens_per_s: f64| Read {
        weights_bytes,
        kv_bytes,
        gb_per_s: (weights_bytes + kv_bytes) as f64 * tokens_per_s / 1e9,
    };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let figures = ModelFigures {
        model: name.to_string(),
        file: path.display().to_string(),
        family: c.family.to_string(),
        file_bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        tensor_bytes,
        token_tensor_bytes,
        held_vs_file: ratio(held as f64, token_tensor_bytes as f64),
        prompt_tokens: prompt.len(),
        generated_tokens: generated,
        prompt_ratio: ratio(ours.prompt_tokens_per_s, llama_cpp.prompt_tokens_per_s),
        generation_ratio: ratio(ours.tokens_per_s, llama_cpp.tokens_per_s),
        ours_read: read(held, ours.tokens_per_s),
        llama_cpp_read: read(token_tensor_bytes, llama_cpp.tokens_per_s),
        ours,
        llama_cpp,
        memory_read_gb_per_s: memory_read_gb_per_s(held as usize, THREADS),
        load: Load { llama_cpp_ms: median(llama_loads), ..load },
        rounds: ours_runs.into_iter().zip(llama_runs).map(|(ours, llama_cpp)| Round { ours, llama_cpp }).collect(),
    };
    Ok(figures)
}

/// `path` loaded from the GGUF (its weights stored in `folder`), then again from the stored file, mapped;
/// the second engine and the load figures.
fn load_twice(path: &Path, folder: &Path) -> Result<(Engine, Load), String> {
    let options = LoadOptions { threads: THREADS, stored_weights: Some(folder.to_path_buf()), ..load_options() };
    let started = Instant::now();
    drop(Engine::load(path, &options).map_err(|e| e.to_string())?);
    let rebuilt_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let engine = Engine::load(path, &options).map_err(|e| e.to_string())?;
    let mapped_ms = started.elapsed().as_secs_f64() * 1e3;
    let WeightsFrom::Mapped { bytes: mapped_bytes } = engine.weights_from() else {
        return Err(format!("the stored weights were not read back: {:?}", engine.weights_from()));
    };
    let started = Instant::now();
    let read = read_once(path)?;
    let read_file_once_ms = started.elapsed().as_secs_f64() * 1e3;
    let huge = crate::engine::held::file_huge_page_bytes();
    Ok((
        engine,
        Load {
            rebuilt_ms,
            mapped_ms,
            llama_cpp_ms: 0.0,
            read_file_once_ms,
            file_bytes_read: read,
            mapped_bytes,
            mapped_on_huge_pages: huge,
        },
    ))
}

/// Reads the file at `path` once through a buffer of 1 MiB (from the page cache, as a later start
/// finds it): the bytes read.
fn read_once(path: &Path) -> Result<u64, String> {
    use std::io::Read;
    let (mut file, _) = crate::files::open(path, crate::files::GGUF).map_err(|e| e.to_string())?;
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
}

/// One run of ours from an empty cache; `generated` is the tokens of the first (every round makes as many).
fn ours_run(
    engine: &mut Engine,
    request: &Request,
    prompt: usize,
    generated: &mut Option<usize>,
    round: usize,
) -> Result<Side, String> {
    let (made, ttft, span) = timed(engine, request).map_err(|e| e.to_string())?;
    if made.prompt_tokens != prompt {
        return Err(format!("the engine ran {} prompt tokens, {prompt} were given to llama.cpp", made.prompt_tokens));
    }
    let tokens = made.tokens.len();
    let first = *generated.get_or_insert(tokens);
    if first != tokens {
        return Err(format!("round {}: the engine generated {tokens} tokens, {first} in the first", round + 1));
    }
    let prompt_tokens_per_s = if ttft > 0.0 { prompt as f64 / ttft } else { 0.0 };
    Ok(Side { prompt_tokens_per_s, tokens_per_s: per_s(tokens, span) })
}

/// One run of run.py (given on standard input) on the workload file `spec`, at [`THREADS`] threads.
fn llama_cpp_run(python: &str, spec: &Path, model: &Path) -> Result<LlamaCppRun, String> {
    let failed = |what: String| format!("llama.cpp ({python}, run.py) on {}: {what}", model.display());
    let mut child = Command::new(python)
        .arg("-")
        .arg(spec)
        .arg(THREADS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("cannot start it: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(RUN_PY.as_bytes()).map_err(|e| failed(format!("cannot give it run.py: {e}")))?;
    }
    let output = child.wait_with_output().map_err(|e| failed(format!("cannot read its output: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(failed(format!("{} ({})", output.status, tail.join(" / "))));
    }
    let mut runs = parse_runs(&String::from_utf8_lossy(&output.stdout)).map_err(failed)?;
    match (runs.pop(), runs.is_empty()) {
        (Some(run), true) if run.threads == THREADS => Ok(run),
        (Some(run), true) => Err(failed(format!("it ran at {} threads, not {THREADS}", run.threads))),
        _ => Err(failed("it printed more than one run for one thread count".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"engine": "llama.cpp 0.3.36", "threads": 2, "prompt_tokens": 516, "prompt_tokens_per_s": 286.5, "prompt_ms": 1801.0, "tokens": 1023, "tokens_per_s": 86.5, "generated": 1024}"#;

    #[test]
    fn a_run_is_read_from_its_line_among_notices() {
        let stdout = format!("llama_context: n_ctx = 2048\n{LINE}\n\n");
        let runs = parse_runs(&stdout).unwrap();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!((run.threads, run.prompt_tokens, run.tokens, run.generated), (2, 516, 1023, 1024));
        assert_eq!((run.prompt_tokens_per_s, run.tokens_per_s), (286.5, 86.5));
        assert_eq!(run.engine, "llama.cpp 0.3.36");
    }

    #[test]
    fn one_run_per_line() {
        let runs = parse_runs(&format!("{LINE}\n{}\n", LINE.replace("\"threads\": 2", "\"threads\": 1"))).unwrap();
        assert_eq!(runs.iter().map(|r| r.threads).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn a_missing_field_is_named_with_its_line() {
        let line = LINE.replace(", \"tokens_per_s\": 86.5", "");
        let error = parse_runs(&format!("notice\n{line}\n")).unwrap_err();
        assert!(error.starts_with("line 2 of llama.cpp's output: missing field `tokens_per_s`"), "{error}");
    }

    #[test]
    fn a_speed_of_zero_or_nan_is_refused() {
        let error = parse_runs(&LINE.replace("86.5", "0.0")).unwrap_err();
        assert!(error.contains("tokens_per_s is 0, not a speed"), "{error}");
        // Python's json.dumps writes NaN, which is not JSON.
        let error = parse_runs(&LINE.replace("286.5", "NaN")).unwrap_err();
        assert!(error.starts_with("line 1 of llama.cpp's output: expected value"), "{error}");
    }

    #[test]
    fn no_run_at_all_is_an_error_quoting_the_output() {
        let error = parse_runs("Traceback (most recent call last):\n  ImportError\n").unwrap_err();
        assert!(error.contains("has no run") && error.contains("Traceback"), "{error}");
        assert!(parse_runs("").is_err());
    }

    #[test]
    fn every_model_name_is_known_or_says_how_to_make_it() {
        for name in MODELS {
            if let Err(why) = model_path(name) {
                assert!(why.contains("tunebench model fetch") || why.contains("qwen3_06b.py"), "{name}: {why}");
            }
        }
        assert!(model_path("gemma-9").unwrap_err().contains("no known model is called \"gemma-9\""));
    }
}
