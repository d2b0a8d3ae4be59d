//! `tunebench truncate`: the answer cut at one position, or every cut swept under json, json-repair and jsonl.

use std::process::ExitCode;

use serde_json::{json, Map, Value};

use super::input::ParseOptions;
use super::parse::human;
use crate::output::parser_for;
use crate::safe_text::escape_controls;
use crate::truncate::cut::{Cuts, Unit};
use crate::truncate::strategy::Strategy;

/// The strategies in CLI.md's order.
const STRATEGIES: [Strategy; 3] = Strategy::SHOWN;
use crate::truncate::sweep::{sweep_points, Sweep};

/// Options of `tunebench truncate`.
#[derive(Debug, clap::Args)]
pub struct TruncateArgs {
    #[command(flatten)]
    pub options: ParseOptions,
    /// What cut positions count: chunks need a transcript; tokens are the model's own token ids in a
    /// local-model transcript, else o200k BPE tokens.
    #[arg(long, value_enum, default_value_t = Unit::Token)]
    pub unit: Unit,
    /// Cut after this many units and parse what is left.
    #[arg(long, required_unless_present = "sweep", conflicts_with = "sweep")]
    pub at: Option<usize>,
    /// Sweep every cut in one pass and report items recovered per strategy.
    #[arg(long)]
    pub sweep: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TruncateArgs) -> anyhow::Result<ExitCode> {
    let setup = args.options.setup()?;
    let answer = args.options.read_answer()?;
    let cuts = Cuts::new(&answer, args.unit)?;
    if let Some(at) = args.at {
        let end = cuts.offset(at)?;
        let prefix = &answer.text[..end];
        let mut parser = parser_for(setup.response_type, setup.profile, setup.check);
        parser.feed(prefix);
        let report = parser.into_report();
        if args.json {
            let mut object = match serde_json::to_value(&report)? {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            object.insert("cut".into(), json!(at));
            object.insert("unit".into(), json!(args.unit));
            object.insert("of".into(), json!(cuts.total()));
            object.insert("text".into(), json!(prefix));
            super::print_json(&object)?;
        } else {
            super::sayln!("cut at {at} of {} {}s ({} of {} bytes):", cuts.total(), args.unit, end, answer.text.len());
            super::sayln!("{}", escape_controls(prefix));
            super::sayln!("---");
            super::say!("{}", human(&report, false));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let result = sweep_points(&answer.text, cuts.points(), setup.profile, setup.item_check);
    if args.json {
        super::print_json(&sweep_json(&result, args.unit, cuts.total()))?;
    } else {
        super::say!("{}", human_sweep(&result, args.unit, cuts.total()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `truncate --sweep --json` report of CLI.md.
pub fn sweep_json(result: &Sweep, unit: Unit, total: usize) -> Value {
    let strategies: Map<String, Value> = STRATEGIES
        .iter()
        .map(|&s| (s.name().to_string(), json!({"resilience": result.resilience(s), "steps": result.steps(s)})))
        .collect();
    json!({"unit": unit, "of": total, "full_items": result.full_items, "strategies": strategies})
}

fn human_sweep(result: &Sweep, unit: Unit, total: usize) -> String {
    let mut out = format!("{total} {unit}s, {} items in the full answer\n", result.full_items);
    out.push_str("strategy      resilience  first item at  items at end  corrupt at end\n");
    for s in STRATEGIES {
        let steps = result.steps(s);
        let first = steps.iter().find(|st| st[1] > 0).map_or("never".to_string(), |st| format!("{unit} {}", st[0]));
        let last = steps.last().copied().unwrap_or([0, 0, 0]);
        out.push_str(&format!(
            "{:<13} {:>10.3}  {:>13}  {:>12}  {:>14}\n",
            s.name().to_string(),
            result.resilience(s),
            first,
            last[1],
            last[2]
        ));
    }
    out
}
