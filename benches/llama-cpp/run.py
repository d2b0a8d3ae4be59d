"""llama.cpp (through llama-cpp-python) on the sample workload, beside `tunebench bench --local-only`.

The same GGUF and the same prompt tokens as tunebench's unconstrained workload run (the sample prompt's
request: its prompt tokens, 1,024 generated, greedy, no repetition penalty), at 1 and 2 threads, timed
by llama.cpp's own timers (llama_perf_context: prompt eval and eval); the model's load (`Llama(...)`:
the file mapped, its vocabulary, the context) by the clock. Every generated token is kept to
the count (an end-of-text is generated through, as tunebench's run reaches its length limit too).

    target/release/tunebench bench --workload-tokens /tmp/workload.json
    python3 benches/llama-cpp/run.py /tmp/workload.json [THREADS ...]

Needs llama-cpp-python (0.3.36 was measured; it builds llama.cpp from source for this CPU:
CMAKE_ARGS="-DGGML_NATIVE=ON" pip install --no-build-isolation llama-cpp-python==0.3.36 with cmake,
ninja and scikit-build-core installed). Prints one JSON object per thread count. `tunebench bench
--vs-llama-cpp` runs this script itself (on its standard input, with a workload file of its own that
may set `n_ctx`), alternately with the engine, and reads those lines.
"""

import json
import sys
import time

import llama_cpp
from llama_cpp import Llama


def run(spec, threads):
    started = time.perf_counter()
    llm = Llama(
        model_path=spec["model"],
        n_ctx=spec.get("n_ctx", 2048),
        n_batch=512,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    load_ms = (time.perf_counter() - started) * 1e3
    ctx = llm._ctx.ctx
    prompt, want = spec["prompt"], spec["max_tokens"]
    # A short warm-up (threads started, pages touched), then the timers from zero.
    for i, _ in enumerate(llm.generate(prompt[:16], top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0)):
        if i >= 4:
            break
    llm.reset()
    llama_cpp.llama_perf_context_reset(ctx)
    tokens = []
    for token in llm.generate(prompt, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0, reset=True):
        tokens.append(token)
        if len(tokens) >= want:
            break
    perf = llama_cpp.llama_perf_context(ctx)
    return {
        "engine": "llama.cpp " + getattr(llama_cpp, "__version__", "?"),
        "threads": threads,
        "prompt_tokens": perf.n_p_eval,
        "prompt_tokens_per_s": perf.n_p_eval / perf.t_p_eval_ms * 1e3 if perf.t_p_eval_ms else 0.0,
        "prompt_ms": perf.t_p_eval_ms,
        "tokens": perf.n_eval,
        "tokens_per_s": perf.n_eval / perf.t_eval_ms * 1e3 if perf.t_eval_ms else 0.0,
        "generated": len(tokens),
        "load_ms": load_ms,
    }


def main():
    spec = json.load(open(sys.argv[1]))
    for threads in [int(t) for t in sys.argv[2:]] or [1, 2]:
        print(json.dumps(run(spec, threads)), flush=True)


if __name__ == "__main__":
    main()
