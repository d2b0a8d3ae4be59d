//! promptfoo's `python` and `javascript` assertions (promptfoo.dev/docs/configuration/expected-outputs/
//! python, …/javascript), run by a small shim we ship as a string (`python3 -c`, `node -e`): the value
//! `file://check.py` (or `file://check.py:my_fn`) calls `get_assert(output, context)` (a `.js` file's
//! exported function), inline code is an expression on one line and a function body (with `return`)
//! on several. What it returns becomes promptfoo's verdict: a bool is the pass, a number the score
//! (passing when it reaches the assertion's `threshold`, else when above 0), an object its
//! `pass`/`score`/`reason`. `output` is the answer's text; `context` holds `vars`, `test` and `config`.

use std::path::Path;

use serde_json::{json, Value};

use super::command::{inside, on_path, Program};
use super::{Graded, Question};
use crate::prompt::expect::CheckSpec;

/// The Python shim: reads the job on stdin, runs the user's check, prints the verdict.
const PYTHON: &str = r#"
import json, math, os, re, sys, textwrap, importlib.util
job = json.load(sys.stdin)
output, context = job["output"], job["context"]
def run():
    if job.get("file"):
        path = job["file"]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("tunebench_check", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = job.get("function") or "get_assert"
        fn = getattr(module, name, None)
        if not callable(fn):
            sys.exit("%s defines no function %s(output, context)" % (os.path.basename(path), name))
        return fn(output, context)
    code = job["code"]
    scope = {"output": output, "context": context, "json": json, "math": math, "re": re}
    if "\n" not in code.strip():
        return eval(code.strip(), scope)
    exec("def __tunebench_check(output, context):\n" + textwrap.indent(textwrap.dedent(code), "    "), scope)
    return scope["__tunebench_check"](output, context)
if job.get("invalid"):
    print(json.dumps({"pass": False, "score": 0.0, "reason": job["invalid"]}))
    sys.exit(0)
try:
    result = run()
except Exception as e:
    # promptfoo fails an assertion whose code raises, the exception its reason (a `not-` does not
    # turn that into a pass: `raised`).
    print(json.dumps({"pass": False, "score": 0.0, "raised": True, "reason": "Python code execution failed: %s: %s" % (type(e).__name__, e)}))
    sys.exit(0)
threshold = job.get("threshold")
if isinstance(result, bool):
    verdict = {"pass": result, "score": 1.0 if result else 0.0}
elif isinstance(result, (int, float)):
    score = float(result)
    passed = score >= threshold if threshold is not None else score > 0
    verdict = {"pass": passed, "score": min(max(score, 0.0), 1.0)}
elif isinstance(result, dict) and isinstance(result.get("pass"), bool):
    score = result.get("score")
    score = (1.0 if result["pass"] else 0.0) if score is None else min(max(float(score), 0.0), 1.0)
    verdict = {"pass": result["pass"], "score": score}
    if result.get("reason") is not None:
        verdict["reason"] = str(result["reason"])
else:
    sys.exit("the check returned %r: promptfoo's checks return a bool, a number or {'pass', 'score', 'reason'}" % (result,))
print(json.dumps(verdict))
"#;

/// The JavaScript shim (node).
const JAVASCRIPT: &str = r#"
let data = '';
process.stdin.on('data', (c) => (data += c));
process.stdin.on('end', async () => {
  try {
    const job = JSON.parse(data);
    const { output, context } = job;
    if (job.invalid) {
      process.stdout.write(JSON.stringify({ pass: false, score: 0, reason: job.invalid }));
      return;
    }
    let result;
    let fn;
    if (job.file) {
      const m = require(job.file);
      fn = job.function ? m[job.function] : typeof m === 'function' ? m : m.default || m.getAssert || m.get_assert;
      if (typeof fn !== 'function') throw new Error(`${job.file} exports no function ${job.function || ''}`);
    } else {
      // One line is an expression (its `;` dropped), several a function body, as promptfoo reads them.
      const code = job.code.trim();
      const body = code.includes('\n') || /\breturn\b/.test(code) ? code : `return (${code.replace(/;+\s*$/, '')});`;
      fn = new Function('output', 'context', body);
    }
    try {
      result = await fn(output, context);
    } catch (e) {
      // promptfoo fails an assertion whose code throws, the error its reason.
      process.stdout.write(JSON.stringify({ pass: false, score: 0, raised: true, reason: `Custom function threw error: ${(e && e.message) || e}` }));
      return;
    }
    const clamp = (n) => Math.min(Math.max(Number(n), 0), 1);
    let verdict;
    if (typeof result === 'boolean') verdict = { pass: result, score: result ? 1 : 0 };
    else if (typeof result === 'number') {
      const t = job.threshold;
      verdict = { pass: t === null || t === undefined ? result > 0 : result >= t, score: clamp(result) };
    } else if (result && typeof result === 'object' && typeof result.pass === 'boolean') {
      verdict = { pass: result.pass, score: result.score === undefined || result.score === null ? (result.pass ? 1 : 0) : clamp(result.score) };
      if (result.reason !== undefined && result.reason !== null) verdict.reason = String(result.reason);
    } else throw new Error(`the check returned ${JSON.stringify(result)}: promptfoo's checks return a boolean, a number or {pass, score, reason}`);
    process.stdout.write(JSON.stringify(verdict));
  } catch (e) {
    process.stderr.write(String((e && e.message) || e));
    process.exit(3);
  }
});
"#;

/// A `python` or `javascript` assertion ready to run.
#[derive(Clone, Debug)]
pub struct Shim {
    program: Program,
    /// `{"file", "function"}` or `{"code"}`, and the threshold.
    job: Value,
}

impl Shim {
    /// The assertion `spec` of type `language` (`python`, `javascript`), its file found in `dir`.
    pub fn of(language: &str, spec: &CheckSpec, dir: &Path) -> Result<Shim, String> {
        let (runner, shim, installed) = match language {
            "python" => ("python3", PYTHON, "Python 3 (`python3`)"),
            _ => ("node", JAVASCRIPT, "Node.js (`node`)"),
        };
        let value = match &spec.value {
            Some(Value::String(text)) if !text.trim().is_empty() => text.as_str(),
            // promptfoo fails such an assertion (its code is not text) rather than refusing the config.
            Some(other) if !other.is_null() => "",
            _ => {
                return Err(format!("a `{language}` assertion needs its code, or `file://check` naming it, as `value`"))
            }
        };
        let job = match value.strip_prefix("file://") {
            _ if value.is_empty() => json!({"invalid": format!("{language} assertion must have a string value")}),
            Some(file) => {
                let (file, function) = split_function(file);
                let path = inside(file, dir)?;
                json!({"file": path, "function": function})
            }
            None => json!({"code": value}),
        };
        let runner_path = on_path(runner).ok_or_else(|| {
            format!("`{language}` assertions run through {installed}, which is not installed (not found on PATH)")
        })?;
        let what = match value.strip_prefix("file://") {
            Some(file) => file.to_string(),
            None => "inline code".to_string(),
        };
        let flag = if language == "python" { "-c" } else { "-e" };
        let program = Program {
            program: runner_path,
            args: vec![flag.to_string(), shim.to_string()],
            dir: dir.to_path_buf(),
            timeout: std::time::Duration::from_secs_f64(super::command::DEFAULT_TIMEOUT_S),
            shown: format!("{runner} ({language} assertion, {what})"),
        };
        let mut job = job;
        job["threshold"] = spec.threshold.map_or(Value::Null, |t| json!(t));
        Ok(Shim { program, job })
    }

    /// The user's check run on `question`'s answer text.
    pub async fn grade(&self, question: &Question) -> Result<Graded, String> {
        let mut job = self.job.clone();
        job["output"] = question.output_parsed.clone().unwrap_or_else(|| Value::String(question.output.clone()));
        job["context"] = json!({"vars": question.vars, "test": {"vars": question.vars}, "config": {}});
        self.program.grade(&job).await
    }
}

/// `check.py:my_fn` into the file and the function (a `:` in a Windows drive is not a function).
fn split_function(file: &str) -> (&str, Option<&str>) {
    match file.rsplit_once(':') {
        Some((path, function))
            if !function.is_empty() && !function.contains(['/', '\\']) && !path.is_empty() && path.len() > 1 =>
        {
            (path, Some(function))
        }
        _ => (file, None),
    }
}
