//! A schema the local model's constrained decoder cannot compile (a `pattern` with a look-ahead) is bad
//! input: `run`, `eval` and `compare` on the local model exit 2 naming the prompt file and the part of
//! the schema, before any model is looked up (the cache directory here is empty and nothing is
//! fetched). Where no decoder holds the answer (`--structured none`), the schema is not refused.

use crate::support::*;

const PROMPT: &str = r#"id = "passwords"
response_type = "jsonl"
template = "Suggest two passwords."
schema = '''
{"type": "object", "properties": {"password": {"type": "string", "pattern": "^(?=.*[A-Z]).+$"}}, "required": ["password"]}
'''

[[cases]]
name = "two"
[cases.expected]
items = [{password = "Abc"}, {password = "Xyz"}]
"#;

#[test]
fn a_schema_the_decoder_refuses_exits_2_before_any_model_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("passwords.toml");
    std::fs::write(&prompt, PROMPT).unwrap();
    let cache = dir.path().join("cache");
    let prompt_arg = prompt.to_str().unwrap();
    let commands: [&[&str]; 3] = [
        &["run", prompt_arg, "--provider", "local", "--structured", "constrained", "--no-fetch"],
        &["eval", prompt_arg, "--provider", "local", "--structured", "json-schema", "--no-fetch"],
        &["compare", prompt_arg, "--provider", "local"],
    ];
    for args in commands {
        let output = tunebench(dir.path()).env("TUNEBENCH_CACHE_DIR", &cache).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(prompt_arg), "names the prompt file: {args:?}: {stderr}");
        assert!(stderr.contains("/properties/password/pattern\""), "names the part: {args:?}: {stderr}");
        assert!(stderr.contains("look-around"), "says why: {args:?}: {stderr}");
        assert!(!stderr.contains("not installed"), "no model was looked up: {args:?}: {stderr}");
    }
    assert!(!cache.exists(), "nothing was fetched");
    // Prompt-only, the local model is not held to the schema: the run gets as far as the missing model.
    let output = tunebench(dir.path())
        .env("TUNEBENCH_CACHE_DIR", &cache)
        .args(["run", prompt_arg, "--provider", "local", "--structured", "none", "--no-fetch"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("pattern"), "{stderr}");
}
