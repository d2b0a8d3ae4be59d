#!/usr/bin/env bash
# tunebench eval's peak memory on a large promptfoo config: TESTS tests (20,000 by default) in a JSONL
# file, each with a `contains` and an `icontains` assertion, against one local OpenAI-compatible
# server (server.py). Each output once asked for (none, --json, -o out.json, -o out.html), a first run
# (every test asked) and a cached re-run; wall time and peak resident memory from /usr/bin/time.
#
#   benches/promptfoo/large.sh TUNEBENCH [TESTS]
#
# TUNEBENCH: a tunebench binary (cargo build --release: the one users run).
set -euo pipefail
tunebench=$(realpath "$1"); tests=${2:-20000}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$here/server.py" "$port" & server=$!
python3 - "$work" "$tests" "$port" <<'PY'
import json, sys
work, tests, port = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(f"{work}/tests.jsonl", "w") as f:
    for i in range(tests):
        f.write(json.dumps({"description": f"case {i}", "vars": {"text": f"MARK-{i}-END"},
            "assert": [{"type": "contains", "value": "entity"}, {"type": "icontains", "value": "thing"}]}) + "\n")
open(f"{work}/promptfooconfig.yaml", "w").write(f"""description: large
prompts:
  - 'Define: {{{{text}}}}'
providers:
  - id: openai:chat:m
    config:
      apiBaseUrl: http://127.0.0.1:{port}/v1
      apiKey: sk-no-key-required
tests: file://tests.jsonl
""")
PY
for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/count" >/dev/null && break; sleep 0.1; done
echo "$tests promptfoo tests, server on port $port"
for output in none --json out.json out.html; do
  case $output in
    none) args=() ;;
    --json) args=(--json) ;;
    *) args=(-o "$work/$output") ;;
  esac
  export TUNEBENCH_DATA_DIR="$work/data-$output" TUNEBENCH_CACHE_DIR="$work/cache-$output"
  for run in "first run" "cached re-run"; do
    status=0
    (cd "$work" && /usr/bin/time -f "%e %M" -o "$work/time" "$tunebench" eval promptfooconfig.yaml ${args[@]+"${args[@]}"} \
      >"$work/out" 2>"$work/err") || status=$?
    read -r seconds kb < <(tail -1 "$work/time")
    printf '%-10s %-14s exit %d %8.2f s %6d MB\n' "$output" "$run" "$status" "$seconds" "$((kb / 1024))"
  done
done
