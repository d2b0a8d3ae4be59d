//! `tunebench bench --vs-llama-cpp`: the engine beside llama.cpp on each model, its options checked,
//! its figures as text.

use serde::Serialize;

use super::bench::BenchArgs;

/// The section: measured, or why not (no Python with llama-cpp-python: how to get one).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum VsSection {
    #[cfg(feature = "local")]
    Measured(crate::provider::local::bench_llama_cpp::VsFigures),
    Skipped {
        skipped: String,
    },
}

/// The models `--vs-model` named (every one when none), each checked.
pub fn models(args: &BenchArgs, known: &[&str]) -> anyhow::Result<Vec<String>> {
    if args.vs_models.is_empty() {
        return Ok(known.iter().map(|m| m.to_string()).collect());
    }
    for name in &args.vs_models {
        anyhow::ensure!(
            known.contains(&name.as_str()),
            "--vs-model {name:?}: not a model of --vs-llama-cpp (they are {})",
            known.join(", ")
        );
    }
    Ok(args.vs_models.clone())
}

/// Runs the section (the sample prompt's unconstrained request, `--vs-tokens` generated at most).
pub fn measure(args: &BenchArgs) -> anyhow::Result<VsSection> {
    anyhow::ensure!(args.vs_rounds > 0, "--vs-rounds must be at least 1, not 0");
    anyhow::ensure!(args.vs_tokens > 0, "--vs-tokens must be at least 1, not 0");
    #[cfg(feature = "local")]
    {
        use crate::provider::local::bench_llama_cpp as vs;
        let models = models(args, &vs::MODELS)?;
        let python = match vs::find_python() {
            Ok(python) => python,
            Err(skipped) => return Ok(VsSection::Skipped { skipped }),
        };
        let mut request = super::bench::sample_workload()?.unconstrained;
        request.max_tokens = Some(args.vs_tokens);
        Ok(VsSection::Measured(vs::measure(python, &models, &request, args.vs_rounds)))
    }
    #[cfg(not(feature = "local"))]
    Ok(VsSection::Skipped { skipped: "built without the `local` feature".into() })
}

/// The section as text.
pub fn human(section: &VsSection) -> String {
    match section {
        #[cfg(feature = "local")]
        VsSection::Measured(f) => {
            use crate::provider::local::bench_llama_cpp::ModelSection;
            let mut out = format!(
                "beside llama.cpp (llama-cpp-python {} through {}): the same GGUF, prompt tokens and generated tokens, \
                 greedy, {} threads, median of {} alternating rounds:\n",
                f.llama_cpp, f.python, f.threads, f.rounds
            );
            for model in &f.models {
                out += &match model {
                    ModelSection::Measured(m) => human_model(m, f.threads),
                    ModelSection::Skipped { model, skipped } => format!("\x20 {model}: skipped ({skipped})\n"),
                };
            }
            out
        }
        VsSection::Skipped { skipped } => format!("beside llama.cpp: skipped ({skipped})\n"),
    }
}

#[cfg(feature = "local")]
fn human_model(m: &crate::provider::local::bench_llama_cpp::ModelFigures, threads: usize) -> String {
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let rounds = |f: &dyn Fn(&crate::provider::local::bench_llama_cpp::Round) -> f64| {
        m.rounds.iter().map(|r| format!("{:.1}", f(r))).collect::<Vec<_>>().join(" · ")
    };
    format!(
        "\x20 {} ({}, {:.0} MB file): {} prompt tokens, {} generated\n\
         \x20   prompt      ours {:>7.1} tokens/s, llama.cpp {:>7.1} tokens/s → {:.2}×  (rounds: ours {}; llama.cpp {})\n\
         \x20   generation  ours {:>7.1} tokens/s, llama.cpp {:>7.1} tokens/s → {:.2}×  (rounds: ours {}; llama.cpp {})\n\
         \x20   read per generated token: the file's tensors {:.0} MB (a token reads {:.0} MB of them); ours holds {:.0} MB \
         of weights ({:.2}× the file's) + {:.0} MB of keys and values at {:.1} GB/s; llama.cpp {:.0} + {:.0} MB at {:.1} GB/s; \
         memory read baseline {:.1} GB/s ({} threads)\n\
         \x20   load        from the GGUF {:.0} ms; a later start {:.0} ms ({:.0} MB of weights mapped, {:.0} MB on 2 MiB pages); \
         llama.cpp {:.0} ms; reading the file once {:.0} ms ({:.0} MB)\n",
        m.model,
        m.family,
        mb(m.file_bytes),
        m.prompt_tokens,
        m.generated_tokens,
        m.ours.prompt_tokens_per_s,
        m.llama_cpp.prompt_tokens_per_s,
        m.prompt_ratio,
        rounds(&|r| r.ours.prompt_tokens_per_s),
        rounds(&|r| r.llama_cpp.prompt_tokens_per_s),
        m.ours.tokens_per_s,
        m.llama_cpp.tokens_per_s,
        m.generation_ratio,
        rounds(&|r| r.ours.tokens_per_s),
        rounds(&|r| r.llama_cpp.tokens_per_s),
        mb(m.tensor_bytes),
        mb(m.token_tensor_bytes),
        mb(m.ours_read.weights_bytes),
        m.held_vs_file,
        mb(m.ours_read.kv_bytes),
        m.ours_read.gb_per_s,
        mb(m.llama_cpp_read.weights_bytes),
        mb(m.llama_cpp_read.kv_bytes),
        m.llama_cpp_read.gb_per_s,
        m.memory_read_gb_per_s,
        threads,
        m.load.rebuilt_ms,
        m.load.mapped_ms,
        mb(m.load.mapped_bytes as u64),
        mb(m.load.mapped_on_huge_pages.unwrap_or(0)),
        m.load.llama_cpp_ms,
        m.load.read_file_once_ms,
        mb(m.load.file_bytes_read),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn args(line: &[&str]) -> BenchArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        Cli::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap().bench
    }

    #[test]
    fn every_model_unless_some_are_named() {
        let known = ["smollm2", "gemma-3-270m", "qwen3-0.6b-random"];
        assert_eq!(models(&args(&["--vs-llama-cpp"]), &known).unwrap(), known);
        let named = models(&args(&["--vs-llama-cpp", "--vs-model", "gemma-3-270m", "--vs-model", "smollm2"]), &known);
        assert_eq!(named.unwrap(), ["gemma-3-270m", "smollm2"]);
    }

    #[test]
    fn an_unknown_model_is_named() {
        let known = ["smollm2", "gemma-3-270m"];
        let error = models(&args(&["--vs-model", "llama-70b"]), &known).unwrap_err().to_string();
        assert_eq!(error, "--vs-model \"llama-70b\": not a model of --vs-llama-cpp (they are smollm2, gemma-3-270m)");
    }

    #[test]
    fn zero_rounds_or_tokens_are_refused() {
        let error = measure(&args(&["--vs-llama-cpp", "--vs-rounds", "0"])).unwrap_err().to_string();
        assert_eq!(error, "--vs-rounds must be at least 1, not 0");
        let error = measure(&args(&["--vs-llama-cpp", "--vs-tokens", "0"])).unwrap_err().to_string();
        assert_eq!(error, "--vs-tokens must be at least 1, not 0");
    }
}
