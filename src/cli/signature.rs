//! `tunebench signature [--input] SIG`: the JSON Schema of a PtcRunner-style signature.

use std::io::Write;
use std::process::ExitCode;

use crate::prompt::signature;

/// Print the JSON Schema of a PtcRunner-style signature (the output part).
#[derive(Clone, Debug, clap::Args)]
pub struct SignatureArgs {
    /// print the parameters' schema instead
    #[arg(long)]
    pub input: bool,
    /// the signature, e.g. "(text :string) -> {sentiment :string, score :float}"
    pub signature: String,
}

/// Prints the schema as pretty JSON on stdout; a syntax error goes to stderr with a caret under the
/// column, and the exit code is 2.
pub fn run(args: &SignatureArgs) -> anyhow::Result<ExitCode> {
    let sig = match signature::parse(&args.signature) {
        Ok(sig) => sig,
        Err(error) => {
            super::note!("{error}");
            return Ok(ExitCode::from(2));
        }
    };
    let repeated = sig.repeated_fields();
    if !repeated.is_empty() {
        super::note!(
            "warning: field {} declared twice: PtcRunner keeps the last type and lists the name twice in \
             \"required\", which strict JSON Schema validators and servers reject",
            repeated.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
        );
    }
    let schema = if args.input { sig.input_schema() } else { sig.output_schema() };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", crate::safe_text::escape_json_text(&render(&schema)?))?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The schema as printed: pretty JSON.
pub fn render(schema: &serde_json::Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(schema)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(input: bool, signature: &str) -> SignatureArgs {
        SignatureArgs { input, signature: signature.to_owned() }
    }

    #[test]
    fn syntax_error_exits_2() {
        let code = run(&args(false, "(x :list) -> :int")).ok();
        assert_eq!(code, Some(ExitCode::from(2)));
    }

    #[test]
    fn prints_output_or_input_schema() {
        let sig = signature::parse("(q :string) -> [:int]").unwrap_or_else(|e| panic!("{e}"));
        let out = render(&sig.output_schema()).unwrap_or_default();
        assert!(out.starts_with("{\n  \"type\": \"object\",\n  \"properties\": {\n    \"items\""), "{out}");
        let input = render(&sig.input_schema()).unwrap_or_default();
        assert!(input.contains("\"required\": [\n    \"q\"\n  ]"), "{input}");
    }

    #[test]
    fn clap_reads_the_flag_and_the_signature() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: SignatureArgs,
        }
        let cli = Cli::try_parse_from(["signature", "--input", "{a :int}"]).map(|c| c.args);
        let cli = cli.unwrap_or_else(|e| panic!("{e}"));
        assert!(cli.input);
        assert_eq!(cli.signature, "{a :int}");
    }
}
