//! promptfoo's output transforms (configuration/guide "Transforming outputs"): a test's
//! `options.transform` and an assertion's `transform`, JavaScript run through `node` as the
//! `javascript` assertions are: an expression on one line (its `;` dropped), a function body on
//! several, or `file://transform.js` (its exported function, or `file://x.js:name`). Each check's
//! chain (the test's, then its own) turns the answer into what the check judges; a transform that
//! throws makes the check not evaluated (promptfoo's cell is an error). One node per folder runs them
//! all ([`super::worker`]).

use std::path::Path;

use serde_json::{json, Value};

use super::command::{inside, on_path};
use super::worker::Worker;

/// The node worker: a job a line on stdin (its steps, the output, the context), `{"output"}` or
/// `{"error"}` a line on stdout.
const NODE: &str = r#"
const readline = require('readline');
const reply = (r) => process.stdout.write(JSON.stringify(r) + '\n');
console.log = console.error;
console.info = console.error;
async function transform(job) {
  let output = job.output;
  for (const step of job.steps) {
    try {
      let fn;
      if (step.file) {
        delete require.cache[require.resolve(step.file)];
        const m = require(step.file);
        fn = step.function ? m[step.function] : typeof m === 'function' ? m : m.default;
        if (typeof fn !== 'function') throw new Error(`${step.file} exports no function ${step.function || ''}`);
      } else {
        const code = step.code.trim();
        const body = code.includes('\n') || /\breturn\b/.test(code) ? code : `return (${code.replace(/;+\s*$/, '')});`;
        fn = new Function('output', 'context', body);
      }
      output = await fn(output, job.context);
    } catch (e) {
      return { error: `Transform failed: ${(e && e.message) || e}` };
    }
  }
  return { output: output === undefined ? null : output };
}
let chain = Promise.resolve();
readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  chain = chain.then(async () => {
    try {
      reply(await transform(JSON.parse(line)));
    } catch (e) {
      reply({ error: String((e && e.message) || e) });
    }
  });
});
"#;

/// A check's transforms, ready to run.
#[derive(Clone)]
pub struct Transform {
    /// node's worker for this folder.
    worker: std::sync::Arc<Worker>,
    /// Each step: `{"code"}` or `{"file", "function"}`.
    steps: Vec<Value>,
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transform").field("steps", &self.steps).finish_non_exhaustive()
    }
}

impl Transform {
    /// The chain `codes` (each inline JavaScript or `file://x.js[:function]`, found in `dir`).
    pub fn of(codes: &[String], dir: &Path) -> Result<Transform, String> {
        let mut steps = Vec::with_capacity(codes.len());
        for code in codes {
            steps.push(match code.strip_prefix("file://") {
                Some(file) => {
                    let (file, function) = super::split_function(file);
                    if !file.ends_with(".js") && !file.ends_with(".cjs") {
                        return Err(format!("the transform {file:?} is not JavaScript: tunebench runs .js transforms"));
                    }
                    json!({"file": inside(file, dir)?, "function": function})
                }
                None => json!({"code": code}),
            });
        }
        let node = on_path("node")
            .ok_or("a `transform` runs through Node.js (`node`), which is not installed (not found on PATH)")?;
        let worker = super::worker::shared(&node, &["-e".to_string(), NODE.to_string()], dir, "node (transforms)");
        Ok(Transform { worker, steps })
    }

    /// `output` (the answer's text, or its parsed value) through the chain, with the case's `vars`;
    /// `Err` says why there is no output (the transform threw, node failed).
    pub async fn apply(&self, output: Value, vars: &Value) -> Result<Value, String> {
        let job = json!({"steps": self.steps, "output": output, "context": {"vars": vars, "test": {"vars": vars}}});
        let worker = std::sync::Arc::clone(&self.worker);
        let timeout = std::time::Duration::from_secs_f64(super::command::DEFAULT_TIMEOUT_S);
        let reply =
            tokio::task::spawn_blocking(move || worker.ask(&job, timeout)).await.map_err(|e| e.to_string())??;
        if let Some(error) = reply.get("error").and_then(Value::as_str) {
            return Err(error.to_string());
        }
        Ok(reply.get("output").cloned().unwrap_or(Value::Null))
    }
}

/// A transformed output as the text checks read it: a string as it is, anything else as JSON
/// (promptfoo's `JSON.stringify`), as an embedder is given a value.
pub use super::similar::text_of;
