//! The prompt the model sees: the GGUF's own chat template (`tokenizer.chat_template`, Jinja) rendered
//! with minijinja as Hugging Face's `apply_chat_template` renders it (blocks trimmed, Python's string
//! methods such as `.strip()`, `.startswith()`, `.split()` through minijinja-contrib's `pycompat`,
//! `raise_exception`, `bos_token`/`eos_token`, no tools) over the request's messages, ending with the
//! assistant's turn opened; a thinking model's template (Qwen3) gets `enable_thinking` false unless the
//! caller asks for thinking. The template comes with the file, so it renders within the steps every
//! template gets ([`RENDER_FUEL`]). ChatML when the file has none.

use std::path::Path;

use candle_core::quantized::gguf_file::Content;
use minijinja::{context, Environment, Error, ErrorKind};

use super::tokenizer::{TextTokenizer, TokenId};
use super::EngineError;
use crate::prompt::template::RENDER_FUEL;

/// One message of the conversation, as the template reads it: its role (`system`, `user`,
/// `assistant`) and its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn<'a> {
    pub role: &'a str,
    pub content: &'a str,
}

/// ChatML, for a GGUF that carries no template.
const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + \
                      '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// What errors call it: "the chat template of FILE.gguf".
    name: String,
    bos: String,
    eos: String,
    /// The template knows a thinking mode: it reads `enable_thinking` or writes `<think>`.
    thinks: bool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChatTemplate")
    }
}

fn raise_exception(message: String) -> Result<String, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

impl ChatTemplate {
    /// Compiles `source` (ChatML when `None`); `bos`/`eos` are the texts of those tokens.
    pub fn new(source: Option<&str>, bos: &str, eos: &str) -> Result<Self, EngineError> {
        Self::named("the GGUF's chat template".into(), source, bos, eos)
    }

    /// The chat template of the GGUF at `path` (`content`: its header, `tokenizer`: its tokenizer).
    pub fn of_gguf(path: &Path, content: &Content, tokenizer: &TextTokenizer) -> Result<Self, EngineError> {
        let text = |id: Option<TokenId>| {
            id.map(|t| String::from_utf8_lossy(tokenizer.token_bytes(t)).into_owned()).unwrap_or_default()
        };
        let source = content.metadata.get("tokenizer.chat_template").and_then(|v| v.to_string().ok());
        let name = format!("the chat template of {} (tokenizer.chat_template)", path.display());
        Self::named(name, source.map(String::as_str), &text(tokenizer.bos), &text(Some(tokenizer.eos)))
    }

    fn named(name: String, source: Option<&str>, bos: &str, eos: &str) -> Result<Self, EngineError> {
        let mut env = Environment::new();
        env.set_fuel(Some(RENDER_FUEL));
        // As Hugging Face renders chat templates (and llama.cpp after it).
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| EngineError::Model(format!("the chat template's syntax settings: {e}")))?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned("chat", source.unwrap_or(CHATML).to_string())
            .map_err(|e| EngineError::Model(format!("{name} does not compile: {e}")))?;
        let thinks = source.is_some_and(|s| s.contains("enable_thinking") || s.contains("<think>"));
        Ok(Self { env, name, bos: bos.to_string(), eos: eos.to_string(), thinks })
    }

    /// What errors call it: "the chat template of FILE.gguf (tokenizer.chat_template)".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the template has a thinking mode (it reads `enable_thinking` or writes `<think>`, as
    /// Qwen3's does); ChatML, used when a file has no template, has none.
    pub fn thinks(&self) -> bool {
        self.thinks
    }

    /// The conversation as the model's prompt text, with the assistant's turn opened, thinking off
    /// (`enable_thinking` false: Qwen3 opens the answer with an empty think block).
    pub fn render(&self, messages: &[Turn<'_>]) -> Result<String, EngineError> {
        self.render_with(messages, false)
    }

    /// [`Self::render`] with `enable_thinking` as given (templates that do not read it ignore it).
    pub fn render_with(&self, messages: &[Turn<'_>], thinking: bool) -> Result<String, EngineError> {
        let template = self.env.get_template("chat").map_err(|e| EngineError::Model(e.to_string()))?;
        let messages: Vec<_> = messages.iter().map(|m| context! { role => m.role, content => m.content }).collect();
        let name = &self.name;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => self.bos.as_str(),
                eos_token => self.eos.as_str(),
                enable_thinking => thinking,
            })
            .map_err(|e| match e.kind() {
                ErrorKind::OutOfFuel => EngineError::Model(format!(
                    "{name} did not finish within {RENDER_FUEL} steps (a loop too long to render): stopped"
                )),
                _ => EngineError::Model(format!("rendering {name} failed: {e}")),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_opens_the_assistant_turn() {
        let template = ChatTemplate::new(None, "<|im_start|>", "<|im_end|>").unwrap();
        let messages = [Turn { role: "system", content: "be brief" }, Turn { role: "user", content: "hi" }];
        assert_eq!(
            template.render(&messages).unwrap(),
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        let broken = ChatTemplate::new(Some("{% for %}"), "", "").unwrap_err().to_string();
        assert!(broken.contains("chat template"), "{broken}");
        let raising = ChatTemplate::new(Some("{{ raise_exception('no system role') }}"), "", "").unwrap();
        assert!(raising.render(&messages).unwrap_err().to_string().contains("no system role"));
    }

    #[test]
    fn a_template_thinks_when_it_reads_enable_thinking_or_writes_think() {
        assert!(!ChatTemplate::new(None, "", "").unwrap().thinks());
        assert!(!ChatTemplate::new(Some("{{ messages[0]['content'] }}"), "", "").unwrap().thinks());
        let reads = "{% if enable_thinking is defined and not enable_thinking %}no{% endif %}";
        assert!(ChatTemplate::new(Some(reads), "", "").unwrap().thinks());
        assert!(ChatTemplate::new(Some("{{ '<think>' }}"), "", "").unwrap().thinks());
    }

    /// A GGUF's template of three nested loops of 100,000 (10^15 steps) stops at the bound.
    #[test]
    fn a_template_that_would_loop_for_ever_stops_with_its_name() {
        let loops = "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}\
                     {{ a }}{% endfor %}{% endfor %}{% endfor %}";
        let template = ChatTemplate::new(Some(loops), "", "").unwrap();
        let error = template.render(&[Turn { role: "user", content: "hi" }]).unwrap_err().to_string();
        assert!(error.contains("the GGUF's chat template did not finish within"), "{error}");
        assert!(error.contains(&RENDER_FUEL.to_string()), "{error}");
    }
}
