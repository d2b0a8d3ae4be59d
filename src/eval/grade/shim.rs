//! promptfoo's `python` and `javascript` assertions (promptfoo.dev/docs/configuration/expected-outputs/
//! python, …/javascript), run by a small worker we ship as a string (`python3 -c`, `node -e`, one
//! of each per folder, kept running: [`super::worker`]): the value
//! `file://check.py` (or `file://check.py:my_fn`) calls `get_assert(output, context)` (a `.js` file's
//! exported function), inline code is an expression on one line and a function body (with `return`)
//! on several. What it returns becomes promptfoo's verdict: a bool is the pass, a number the score
//! (passing when it reaches the assertion's `threshold`, else when above 0), an object its
//! `pass`/`score`/`reason`. `output` is the answer's text; `context` holds `vars`, `test` and `config`.

use std::path::Path;

use serde_json::{json, Value};

use super::command::{inside, on_path};
use super::worker::Worker;
use super::{Graded, Question};
use crate::prompt::expect::CheckSpec;

/// The Python worker: a job a line on stdin, a `{"verdict"}` or `{"problem"}` a line on stdout (the
/// user's prints go to stderr).
const PYTHON: &str = r#"
import json, math, os, re, sys, textwrap, importlib.util
reply_to = sys.stdout
sys.stdout = sys.stderr
class Problem(Exception):
    pass
def run(job, output, context):
    if job.get("file"):
        path = job["file"]
        if os.path.dirname(path) not in sys.path:
            sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("tunebench_check", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = job.get("function") or "get_assert"
        fn = getattr(module, name, None)
        if not callable(fn):
            raise Problem("%s defines no function %s(output, context)" % (os.path.basename(path), name))
        return fn(output, context)
    code = job["code"]
    scope = {"output": output, "context": context, "json": json, "math": math, "re": re}
    if "\n" not in code.strip():
        return eval(code.strip(), scope)
    exec("def __tunebench_check(output, context):\n" + textwrap.indent(textwrap.dedent(code), "    "), scope)
    return scope["__tunebench_check"](output, context)
def verdict(job):
    if job.get("invalid"):
        return {"pass": False, "score": 0.0, "reason": job["invalid"]}
    try:
        result = run(job, job["output"], job["context"])
    except Problem:
        raise
    except Exception as e:
        # promptfoo fails an assertion whose code raises, the exception its reason (a `not-` does not
        # turn that into a pass: `raised`).
        return {"pass": False, "score": 0.0, "raised": True, "reason": "Python code execution failed: %s: %s" % (type(e).__name__, e)}
    threshold = job.get("threshold")
    if isinstance(result, bool):
        return {"pass": result, "score": 1.0 if result else 0.0}
    if isinstance(result, (int, float)):
        score = float(result)
        passed = score >= threshold if threshold is not None else score > 0
        return {"pass": passed, "score": min(max(score, 0.0), 1.0)}
    if isinstance(result, dict) and isinstance(result.get("pass"), bool):
        score = result.get("score")
        score = (1.0 if result["pass"] else 0.0) if score is None else min(max(float(score), 0.0), 1.0)
        out = {"pass": result["pass"], "score": score}
        if result.get("reason") is not None:
            out["reason"] = str(result["reason"])
        return out
    raise Problem("the check returned %r: promptfoo's checks return a bool, a number or {'pass', 'score', 'reason'}" % (result,))
for line in sys.stdin:
    try:
        reply = {"verdict": verdict(json.loads(line))}
    except Problem as p:
        reply = {"problem": str(p)}
    except BaseException as e:
        reply = {"problem": "%s: %s" % (type(e).__name__, e)}
    reply_to.write(json.dumps(reply) + "\n")
    reply_to.flush()
"#;

/// The JavaScript worker (node), with the same lines in and out, one job at a time.
const JAVASCRIPT: &str = r#"
const readline = require('readline');
const reply = (r) => process.stdout.write(JSON.stringify(r) + '\n');
console.log = console.error;
console.info = console.error;
class Problem extends Error {}
async function verdict(job) {
  if (job.invalid) return { pass: false, score: 0, reason: job.invalid };
  const { output, context } = job;
  let fn;
  if (job.file) {
    delete require.cache[require.resolve(job.file)];
    const m = require(job.file);
    fn = job.function ? m[job.function] : typeof m === 'function' ? m : m.default || m.getAssert || m.get_assert;
    if (typeof fn !== 'function') throw new Problem(`${job.file} exports no function ${job.function || ''}`);
  } else {
    // One line is an expression (its `;` dropped), several a function body, as promptfoo reads them.
    const code = job.code.trim();
    const body = code.includes('\n') || /\breturn\b/.test(code) ? code : `return (${code.replace(/;+\s*$/, '')});`;
    fn = new Function('output', 'context', body);
  }
  let result;
  try {
    result = await fn(output, context);
  } catch (e) {
    // promptfoo fails an assertion whose code throws, the error its reason.
    return { pass: false, score: 0, raised: true, reason: `Custom function threw error: ${(e && e.message) || e}` };
  }
  const clamp = (n) => Math.min(Math.max(Number(n), 0), 1);
  if (typeof result === 'boolean') return { pass: result, score: result ? 1 : 0 };
  if (typeof result === 'number') {
    const t = job.threshold;
    return { pass: t === null || t === undefined ? result > 0 : result >= t, score: clamp(result) };
  }
  if (result && typeof result === 'object' && typeof result.pass === 'boolean') {
    const out = { pass: result.pass, score: result.score === undefined || result.score === null ? (result.pass ? 1 : 0) : clamp(result.score) };
    if (result.reason !== undefined && result.reason !== null) out.reason = String(result.reason);
    return out;
  }
  throw new Problem(`the check returned ${JSON.stringify(result)}: promptfoo's checks return a boolean, a number or {pass, score, reason}`);
}
let chain = Promise.resolve();
readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  chain = chain.then(async () => {
    try {
      reply({ verdict: await verdict(JSON.parse(line)) });
    } catch (e) {
      reply({ problem: String((e && e.message) || e) });
    }
  });
});
"#;

/// A `python` or `javascript` assertion ready to run.
#[derive(Clone)]
pub struct Shim {
    /// The check as messages name it (`python3 (python assertion, check.py)`) and its timeout.
    shown: String,
    timeout: std::time::Duration,
    /// The language's worker, shared by every check of this folder.
    worker: std::sync::Arc<Worker>,
    /// `{"file", "function"}` or `{"code"}`, and the threshold.
    job: Value,
}

impl std::fmt::Debug for Shim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shim").field("shown", &self.shown).field("job", &self.job).finish_non_exhaustive()
    }
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
                let (file, function) = super::split_function(file);
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
        let args = [flag.to_string(), shim.to_string()];
        let worker = super::worker::shared(&runner_path, &args, dir, &format!("{runner} ({language} assertions)"));
        let mut job = job;
        job["threshold"] = spec.threshold.map_or(Value::Null, |t| json!(t));
        Ok(Shim {
            shown: format!("{runner} ({language} assertion, {what})"),
            timeout: std::time::Duration::from_secs_f64(super::command::DEFAULT_TIMEOUT_S),
            worker,
            job,
        })
    }

    /// The user's check run on `question`'s answer text.
    pub async fn grade(&self, question: &Question) -> Result<Graded, String> {
        let mut job = self.job.clone();
        job["output"] = question.output_parsed.clone().unwrap_or_else(|| Value::String(question.output.clone()));
        job["context"] = json!({"vars": question.vars, "test": {"vars": question.vars}, "config": {}});
        let (worker, timeout) = (std::sync::Arc::clone(&self.worker), self.timeout);
        let reply = tokio::task::spawn_blocking(move || worker.ask(&job, timeout))
            .await
            .map_err(|e| format!("{}: {e}", self.shown))?
            .map_err(|why| format!("{}: {why}", self.shown))?;
        match (reply.get("verdict"), reply.get("problem")) {
            (Some(verdict), _) => {
                Graded::from_verdict(verdict).map_err(|why| format!("{} gave no verdict: {why}", self.shown))
            }
            (None, Some(problem)) => Err(format!("{}: {}", self.shown, problem.as_str().unwrap_or_default())),
            (None, None) => Err(format!("{} answered neither a verdict nor a problem", self.shown)),
        }
    }
}

/// How much of an assertion's code, and of each variable, its failure quotes; how many variables.
const QUOTED_CODE: usize = 80;
const QUOTED_VALUE: usize = 40;
const QUOTED_VARIABLES: usize = 6;

impl Shim {
    /// What the assertion ran on, in words: `` `output.length > 30` on the case's variables
    /// name="Ada" `` (the code and each value cut short).
    pub fn ran_on(&self, question: &Question) -> String {
        let cut = crate::eval::values::cut;
        let code = match (&self.job["code"], &self.job["file"]) {
            (Value::String(code), _) => {
                format!("`{}`", cut(&code.split_whitespace().collect::<Vec<_>>().join(" "), QUOTED_CODE))
            }
            (_, Value::String(file)) => match self.job["function"].as_str() {
                Some(function) => format!("{function}() in {file}"),
                None => file.clone(),
            },
            _ => "the assertion".to_string(),
        };
        let vars = question.vars.as_object().filter(|vars| !vars.is_empty());
        let Some(vars) = vars else { return format!("{code} on a case with no variables") };
        let mut shown: Vec<String> = vars
            .iter()
            .take(QUOTED_VARIABLES)
            .map(|(name, value)| {
                let value = match value {
                    Value::String(text) => format!("{:?}", cut(text, QUOTED_VALUE)),
                    other => cut(&other.to_string(), QUOTED_VALUE),
                };
                format!("{name}={value}")
            })
            .collect();
        if vars.len() > QUOTED_VARIABLES {
            shown.push(format!("and {} more", vars.len() - QUOTED_VARIABLES));
        }
        format!("{code} on the case's variables {}", shown.join(", "))
    }
}
