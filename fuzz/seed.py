#!/usr/bin/env python3
"""Seeds the local working corpus fuzz/corpus/<target>/ (git-ignored) from the conformance cases and
wire recordings the tests use.

Each seed is the target's input format: two option bytes (see fuzz/src/lib.rs) then the text, or the
raw text for `signature` and `template`. Run from the repo root: python3 fuzz/seed.py PEERS_CASES
(the peers' cases.jsonl; the wire recordings and sample prompts are read from the repo). It writes to
the local corpus only; to fold what these add into the tracked seed set fuzz/seeds/<target>/ (which
.ci/fuzz and CI run from), run `FUZZ_SEEDS=1 .ci/fuzz 0` (or with seconds to fuzz first) and commit
the change to fuzz/seeds/.
"""
import glob
import hashlib
import json
import os
import sys

corpus = os.path.join(os.path.dirname(__file__), "corpus")


def put(target, data):
    os.makedirs(os.path.join(corpus, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(corpus, target, name), "wb") as f:
        f.write(data)


def body_of(recording):
    text = open(recording, "rb").read()
    head, _, body = text.partition(b"\r\n\r\n") if b"\r\n\r\n" in text else text.partition(b"\n\n")
    return body if b"HTTP/1.1 200" in head else None


cases = [json.loads(line) for line in open(sys.argv[1])]
for case in cases:
    kind, given = case["kind"], case.get("input")
    if not isinstance(given, str):
        continue
    if kind == "parse_jsonl":
        put("jsonl_parser", bytes([0, 7]) + given.encode())
        put("jsonl_parser", bytes([2 | 4, 3]) + given.encode())
        put("json_repair", bytes([0, 1]) + given.encode())
    elif kind in ("parse_json", "extract_json", "json_mode"):
        put("json_extract", bytes([0, 5]) + given.encode())
        put("json_repair", bytes([4, 9]) + given.encode())
    elif kind in ("signature_parse", "signature_error", "signature_to_schema", "signature_validate"):
        put("signature", given)

for answer in glob.glob("tests/fixtures/compare/*.jsonl"):
    # Transcripts: the answer is the concatenated chunk texts.
    text = "".join(json.loads(line).get("text", "") for line in open(answer) if '"text"' in line)
    put("jsonl_parser", bytes([0, 11]) + text.encode())
    put("json_repair", bytes([0, 13]) + text.encode()[:1024])
    put("json_extract", bytes([4, 2]) + text.encode())

for prompt in glob.glob("sample-prompts/*.toml"):
    put("template", open(prompt, "rb").read())
    put("template", b"You extract.\0Text: {{ text }}\n{{#items}}- {{.}}\n{{/items}}\0"
        + json.dumps({"text": "a cat", "items": ["x", "y"]}).encode())

for recording in glob.glob("tests/fixtures/wire/*/*.txt"):
    body = body_of(recording)
    if body is None:
        continue
    if "/ollama/" in recording:
        put("ndjson_stream", bytes([0, 4]) + body)
    elif "/anthropic/" in recording:
        put("sse_stream", bytes([1, 4]) + body)
    else:
        put("sse_stream", bytes([0, 6]) + body)
