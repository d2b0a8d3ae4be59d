"""Writes the same 100-case extraction eval for both tools into DIR: bench.toml (tunebench: expected
items paired on `entity`) and promptfooconfig.yaml (promptfoo: a JavaScript assertion that parses the
jsonl answer and compares it with the same expected items)."""
import json, sys, os

cases = int(sys.argv[2]) if len(sys.argv) > 2 else 100
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
schema = {"type": "object", "properties": {"entity": {"type": "string"}, "definition": {"type": "string"}}, "required": ["entity", "definition"]}
expected = lambda i: [{"entity": f"entity {i} {k}", "definition": "A thing."} for k in range(5)]

toml = ['id = "bench"', 'response_type = "jsonl"', 'template = "Define: {{text}}"', f"schema = '''{json.dumps(schema)}'''",
        "[eval]", 'match = "entity"']
for i in range(cases):
    toml += ["[[cases]]", f'name = "case-{i}"', f'variables = {{ text = "MARK-{i}-END" }}', "[cases.expected]",
             "items = [" + ", ".join(f'{{ entity = "{e["entity"]}", definition = "{e["definition"]}" }}' for e in expected(i)) + "]"]
open(os.path.join(out, "bench.toml"), "w").write("\n".join(toml) + "\n")

check = """module.exports = (output, context) => {
  const got = new Map();
  for (const line of output.split('\\n')) {
    if (!line.trim()) continue;
    try { const item = JSON.parse(line); got.set(String(item.entity).trim().toLowerCase(), item); } catch (e) { }
  }
  const expected = JSON.parse(context.vars.expected);
  const wrong = expected.filter(e => {
    const item = got.get(e.entity.trim().toLowerCase());
    return !item || String(item.definition).trim().toLowerCase() !== e.definition.trim().toLowerCase();
  });
  return { pass: wrong.length === 0 && got.size === expected.length, score: 1 - wrong.length / expected.length,
           reason: wrong.length ? `${wrong.length} items differ` : 'all items match' };
};
"""
open(os.path.join(out, "check.js"), "w").write(check)
yaml = ["description: bench", "prompts:", "  - 'Define: {{text}}'", "providers:", "  - id: openai:chat:bench",
        "    config:", "      apiBaseUrl: http://127.0.0.1:{PORT}/v1", "      apiKey: unused",
        "defaultTest:", "  assert:", "    - type: javascript", "      value: file://check.js", "tests:"]
for i in range(cases):
    yaml += [f"  - vars:", f"      text: MARK-{i}-END", f"      expected: '{json.dumps(expected(i))}'"]
open(os.path.join(out, "promptfooconfig.yaml.in"), "w").write("\n".join(yaml) + "\n")
