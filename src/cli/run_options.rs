//! The options `run` and `compare` share: which provider and model, the variables and case, sampling,
//! the structured mode and the turns — one clap struct flattened into both; its [`SetupFlags`] (all but
//! the model and case) into `eval` too, which repeats `--model` and `--case`. The variables and
//! sampling part ([`Sampling`]) is flattened into `batch export` too.

use anyhow::bail;

use crate::prompt::file::{PromptFile, ProviderSettings, Thinking};
use crate::prompt::template::Variables;
use crate::run::SetupOptions;

/// How a prompt is run (`compare`: both sides alike, defaults from side A's prompt).
#[derive(Debug, clap::Args)]
pub struct RunOptions {
    /// The model name [default: the prompt's; replay: the transcript's; local: a GGUF file, else the
    /// default model from the cache directory].
    #[arg(long)]
    pub model: Option<String>,
    /// Run one of the prompt's test cases.
    #[arg(long, conflicts_with = "all_cases")]
    pub case: Option<String>,
    /// Run every test case of the prompt, as a batch.
    #[arg(long)]
    pub all_cases: bool,
    #[command(flatten)]
    pub flags: SetupFlags,
}

/// The flags every command that runs prompts shares (`run`, `compare`, `eval`): the provider and its
/// server, the variables and sampling, the structured mode, the turns and the client's limits.
#[derive(Debug, clap::Args)]
pub struct SetupFlags {
    /// openai, vllm, ollama, anthropic, local or replay [default: the prompt's, else local].
    #[arg(long)]
    pub provider: Option<String>,
    /// The server's base URL, e.g. http://127.0.0.1:8080/v1 [default: the prompt's, else the
    /// provider's environment variable (OPENAI_BASE_URL, OLLAMA_HOST, ANTHROPIC_BASE_URL)].
    #[arg(long)]
    pub base_url: Option<String>,
    #[command(flatten)]
    pub sampling: Sampling,
    /// How the answer is held to JSON: none, json-object, json-schema or constrained [default: the
    /// prompt's; else constrained for a json/jsonl prompt on local, none otherwise]. `eval` takes
    /// several, comma-separated: a column per mode over the same cases.
    #[arg(long, value_parser = structured_modes)]
    pub structured: Option<String>,
    /// Turns allowed: a failed answer is retried with error feedback [default: the prompt's, else 1].
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// The model's context window in tokens; caps the feedback a retry carries.
    #[arg(long, default_value_t = crate::run::plan::DEFAULT_CONTEXT_TOKENS)]
    pub context_tokens: u32,
    /// The run's total deadline in seconds, every turn and retry wait included; a run that passes it
    /// ends cancelled with its partial answer kept [default: the prompt's, else 600].
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// The largest answer (bytes of text per turn) read before the client cuts it off, whatever the
    /// server does [default: the prompt's, else 16777216].
    #[arg(long, value_name = "BYTES")]
    pub max_answer_bytes: Option<u64>,
    /// A jsonl answer stops once it holds N items (finish stop, the record says why) [default: the
    /// prompt's, else no limit].
    #[arg(long, value_name = "N")]
    pub max_items: Option<u32>,
    /// A jsonl answer stops at N repeated lines in a row (a repeated line is reported and not counted
    /// as an item; 0: repeats never stop it) [default: the prompt's, else 2].
    #[arg(long, value_name = "N")]
    pub max_repeats: Option<u32>,
    /// The local model's repetition penalty, llama.cpp's (1 is off) [default: the prompt's, else the
    /// local default; see README].
    #[arg(long, value_name = "PENALTY")]
    pub repeat_penalty: Option<f64>,
    /// How many of the answer's last tokens the repetition penalty looks at [default: the prompt's,
    /// else 64].
    #[arg(long, value_name = "N")]
    pub repeat_last_n: Option<u32>,
    /// Ask an OpenAI-compatible server for each token's probability and the runner-up (logprobs);
    /// kept in the transcript (the local model always reports them).
    #[arg(long)]
    pub logprobs: bool,
    /// The local model thinks before its answer, at most BUDGET tokens [default BUDGET: 512], then
    /// answers held to the schema; needs a model whose chat template thinks (Qwen3) [default: the
    /// prompt's thinking, else off]. The thought is shown apart and never parsed.
    #[arg(long, value_name = "BUDGET", num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = Thinking::parse)]
    pub think: Option<Thinking>,
}

/// `--structured`: one mode or several, comma-separated, each a known one (named when not).
fn structured_modes(text: &str) -> Result<String, String> {
    for mode in text.split(',') {
        if crate::provider::StructuredMode::parse(mode.trim()).is_none() {
            return Err(format!("{mode:?} is not a structured mode: none, json-object, json-schema, constrained"));
        }
    }
    Ok(text.to_string())
}

impl SetupFlags {
    /// `--structured` as several modes (`eval`'s a column per mode), when it names more than one.
    pub fn structured_list(&self) -> Vec<crate::provider::StructuredMode> {
        let Some(text) = self.structured.as_deref().filter(|t| t.contains(',')) else { return Vec::new() };
        text.split(',').filter_map(|mode| crate::provider::StructuredMode::parse(mode.trim())).collect()
    }

    /// The command line's provider settings (over the prompt's `[provider]`), with `model`.
    pub fn provider_settings(&self, model: Option<String>) -> ProviderSettings {
        ProviderSettings {
            timeout: self.timeout,
            max_answer_bytes: self.max_answer_bytes,
            max_items: self.max_items,
            max_repeats: self.max_repeats,
            repeat_penalty: self.repeat_penalty,
            repeat_last_n: self.repeat_last_n,
            logprobs: self.logprobs.then_some(true),
            thinking: self.think,
            ..self.sampling.provider_settings(
                self.provider.clone(),
                model,
                self.base_url.clone(),
                self.structured.clone(),
            )
        }
    }

    /// The `--var` and `--var-file` values.
    pub fn variables(&self) -> anyhow::Result<Variables> {
        self.sampling.variables()
    }

    /// The run setup's options these flags give, with `model`: the target typed here (a bad
    /// `--provider` is an error naming it), the variables read, the turns and context window.
    pub fn setup_options(&self, model: Option<String>) -> anyhow::Result<SetupOptions> {
        self.setup_options_over(self.provider_settings(model))
    }

    /// As [`SetupFlags::setup_options`], the structured mode left to each column (`eval
    /// --structured a,b`).
    pub fn setup_options_each_mode(&self, model: Option<String>) -> anyhow::Result<SetupOptions> {
        self.setup_options_over(ProviderSettings { structured: None, ..self.provider_settings(model) })
    }

    fn setup_options_over(&self, flags: ProviderSettings) -> anyhow::Result<SetupOptions> {
        Ok(SetupOptions {
            max_turns: self.max_turns,
            context_tokens: Some(self.context_tokens),
            variables: self.variables()?,
            ..SetupOptions::from_flags(flags)?
        })
    }
}

/// The variables and sampling settings laid over a prompt's (`run`, `compare`, `batch export`).
#[derive(Debug, clap::Args)]
pub struct Sampling {
    /// A variable over the prompt's and the case's. VALUE is text; one starting with [ or { that
    /// parses as JSON is taken as that JSON value.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// A variable whose text is read from a file (- for standard input).
    #[arg(long = "var-file", value_name = "NAME=PATH")]
    pub var_files: Vec<String>,
    /// Output tokens allowed per answer [default: the prompt's].
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature [default: the prompt's, else 0].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// A stop sequence (repeat for several).
    #[arg(long)]
    pub stop: Vec<String>,
}

impl Sampling {
    /// The `--var` and `--var-file` values.
    pub fn variables(&self) -> anyhow::Result<Variables> {
        super::run::variables_from(&self.vars, &self.var_files)
    }

    /// Provider settings over the prompt's `[provider]`: these, with the given provider, model, base
    /// URL and structured mode.
    pub fn provider_settings(
        &self,
        name: Option<String>,
        model: Option<String>,
        base_url: Option<String>,
        structured: Option<String>,
    ) -> ProviderSettings {
        ProviderSettings {
            name,
            model,
            base_url,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            structured,
            stop: self.stop.clone(),
            ..ProviderSettings::default()
        }
    }
}

impl RunOptions {
    /// The command line's provider settings (over the prompt's `[provider]`).
    pub fn provider_settings(&self) -> ProviderSettings {
        self.flags.provider_settings(self.model.clone())
    }

    /// The `--var` and `--var-file` values.
    pub fn variables(&self) -> anyhow::Result<Variables> {
        self.flags.variables()
    }

    /// The run setup's options these flags give ([`SetupFlags::setup_options`] with `--model`).
    pub fn setup_options(&self) -> anyhow::Result<SetupOptions> {
        self.flags.setup_options(self.model.clone())
    }

    /// The cases to run: every case of `prompt` (`--all-cases`), the one named, or none.
    pub fn cases(&self, prompt: &PromptFile) -> anyhow::Result<Vec<Option<String>>> {
        if !self.all_cases {
            return Ok(vec![self.case.clone()]);
        }
        if prompt.cases.is_empty() {
            bail!("--all-cases: prompt `{}` has no [[cases]]", prompt.id);
        }
        Ok(prompt.cases.iter().map(|c| Some(c.name.clone())).collect())
    }
}
