//! How `tunebench bench` prints the local model's section: its speeds, against candle's matmuls, and
//! the sample workload's figures.

use super::bench::LocalSection;

#[cfg(feature = "local")]
fn human_workload(w: &crate::provider::local::bench::WorkloadFigures) -> String {
    let mut out = format!(
        "\x20 {} (prompt from scratch each run; memory read baseline {:.1} GB/s, peak RSS {:.0} MB):\n",
        w.name, w.memory_read_gb_per_s, w.peak_rss_mb
    );
    for r in &w.runs {
        out += &format!(
            "\x20   {:<13} {} thread{}: prompt {} tokens at {:>6.0} tokens/s (TTFT {:>5.0} ms), {:>6.1} tokens/s generating \
             ({} tokens, {} forced, {}), {:.0} MB read per token ({:.1} GB/s)\n",
            r.mode,
            r.threads,
            if r.threads == 1 { " " } else { "s" },
            r.prompt_tokens,
            r.prompt_tokens_per_s,
            r.ttft_ms,
            r.tokens_per_s,
            r.tokens,
            r.forced_tokens,
            r.finish,
            r.mb_per_token,
            r.read_gb_per_s,
        );
    }
    let f = &w.first_token;
    out += &format!(
        "\x20   time to first token, constrained, {} threads: load {:.0} ms with the weights rebuilt, {:.0} ms read back \
         stored; first run as `tunebench run` (load + grammar + prompt) {:.0} ms; the workbench's first run (loaded \
         and the prompt run in the background at start) {:.0} ms; next run {:.0} ms; next case {:.0} ms ({} prompt \
         tokens reused), or {:.0} ms when the workbench ran it on choosing the case; later case, warm prefix \
         {:.0} ms ({} of {} prompt tokens reused, the grammar kept)\n",
        w.runs.first().map_or(0, |_| crate::engine::threads::configured()),
        f.load_rebuilt_ms,
        f.load_stored_ms,
        f.cli_first_run_ms,
        f.workbench_first_run_ms,
        f.next_run_ms,
        f.next_case_ms,
        f.next_case_reused_tokens,
        f.next_case_chosen_ms,
        f.later_case_ms,
        f.later_case_reused_tokens,
        f.later_case_prompt_tokens,
    );
    out
}

/// The local model's section as `tunebench bench` prints it.
pub fn human(section: &LocalSection) -> String {
    match section {
        #[cfg(feature = "local")]
        LocalSection::Measured(f) => {
            let line = |name: &str, s: &crate::provider::local::bench::Speed| {
                format!(
                    "\x20 {name:<26} {:>7.1} tokens/s, {:>5.1} per CPU-second  ({} tokens, {} forced; prompt {} tokens in {:.0} ms)\n",
                    s.tokens_per_s, s.tokens_per_cpu_s, s.tokens, s.forced_tokens, s.prompt_tokens, s.prefill_ms
                )
            };
            format!(
                "local model ({}, {} threads):\n\
                 \x20 load {:.0} ms (candle, Q4_1 → Q8_0 at load: {:.0} ms), constraint engine set up in {:.0} ms\n\
                 {}{}{}{}\
                 \x20 constrained / unconstrained {:.2}×, masked / unconstrained {:.2}×, ours / candle {:.2}×\n\
                 \x20 weights read per token: ours {:.0} MB at {:.1} GB/s, candle {:.0} MB at {:.1} GB/s; \
                 memory read baseline {:.1} GB/s\n\
                 \x20 peak RSS {:.0} MB\n{}",
                f.model,
                f.threads,
                f.load_ms,
                f.load_candle_ms,
                f.constraint_setup_ms,
                line("unconstrained", &f.unconstrained),
                line("json-schema (masked)", &f.masked),
                line("constrained (forced)", &f.constrained),
                line("baseline: candle matmuls", &f.candle_unconstrained),
                f.constrained_vs_unconstrained,
                f.masked_vs_unconstrained,
                f.native_vs_candle,
                f.weights_mb,
                f.weights_gb_per_s,
                f.candle_weights_mb,
                f.candle_weights_gb_per_s,
                f.memory_read_gb_per_s,
                f.peak_rss_mb,
                f.workload.as_ref().map(human_workload).unwrap_or_default(),
            )
        }
        LocalSection::Skipped { skipped } => format!("local model: skipped ({skipped})\n"),
    }
}
