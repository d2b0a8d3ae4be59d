"""A 1B-class Q4_K_M for `tunebench bench --vs-llama-cpp`: a random-weight Qwen3 with Qwen3-0.6B's shapes.

28 layers, hidden 1024, FFN 3072, 16 query heads and 8 key/value heads of 128, vocabulary 151,936 with
the embeddings tied to the output (596 M parameters), written with gguf-py as F16 from a seeded
numpy generator, then quantized to Q4_K_M by llama.cpp's own quantizer (`llama_model_quantize`
through llama-cpp-python: the same mix of Q4_K, Q6_K and fallbacks as llama-quantize). The
tokenizer is the real Qwen2/Qwen3 one (llama.cpp's `ggml-vocab-qwen2.gguf`, 151,936 tokens, with
Qwen3's `<think>`/`</think>` in their places and `<|im_end|>` as end of turn); no chat template, so
the engine and llama.cpp both render ChatML. Random weights give random tokens: fine for speed.

    python benches/llama-cpp/qwen3_06b.py [CACHE_DIR]

CACHE_DIR is tunebench's cache directory (`TUNEBENCH_CACHE_DIR`, else ~/.cache/tunebench); the model
is written to CACHE_DIR/models/qwen3-0.6b-random-q4_k_m.gguf (397 MB; the F16 file beside it,
1.2 GB, is removed once quantized). The vocabulary comes from CACHE_DIR/vocab/ggml-vocab-qwen2.gguf:
`bash tests/fixtures/families/vocab.sh CACHE_DIR/vocab` puts it there. Needs gguf, numpy and
llama-cpp-python (the pip line in run.py's docstring). Takes a minute or two on 2 cores.
"""

import hashlib
import os
import sys

import gguf
import numpy as np

FILE_NAME = "qwen3-0.6b-random-q4_k_m.gguf"
SEED = 20260601
N_LAYER, N_EMBD, N_FF, N_HEAD, N_HEAD_KV, HEAD_DIM = 28, 1024, 3072, 16, 8, 128
N_VOCAB = 151_936
SPECIAL = {151667: "<think>", 151668: "</think>"}
EOS, PAD = 151645, 151643


def cache_dir() -> str:
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.environ.get("TUNEBENCH_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tunebench")


def vocabulary(path: str):
    if not os.path.isfile(path):
        sys.exit(f"{path} is missing: run `bash tests/fixtures/families/vocab.sh {os.path.dirname(path)}` first")
    reader = gguf.GGUFReader(path)
    tokens = list(reader.fields["tokenizer.ggml.tokens"].contents())
    types = list(reader.fields["tokenizer.ggml.token_type"].contents())
    merges = list(reader.fields["tokenizer.ggml.merges"].contents())
    if len(tokens) != N_VOCAB:
        sys.exit(f"{path} has {len(tokens)} tokens, not Qwen's {N_VOCAB}")
    for i, text in SPECIAL.items():
        tokens[i], types[i] = text, int(gguf.TokenType.USER_DEFINED)
    return tokens, types, merges


def write_f16(path: str, tokens, types, merges) -> None:
    rng = np.random.default_rng(SEED)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.float32(np.sqrt(cols))).astype(np.float16)

    def norm(n: int) -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    w = gguf.GGUFWriter(path, "qwen3")
    w.add_name("tunebench-qwen3-0.6b-random")
    w.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    w.add_context_length(40960)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(PAD)
    w.add_eos_token_id(EOS)
    w.add_pad_token_id(PAD)
    w.add_add_bos_token(False)
    # Tied: no output.weight, the token embeddings are the output matrix.
    w.add_tensor("token_embd.weight", matrix(N_VOCAB, N_EMBD))
    w.add_tensor("output_norm.weight", norm(N_EMBD))
    q, kv = N_HEAD * HEAD_DIM, N_HEAD_KV * HEAD_DIM
    for il in range(N_LAYER):
        b = f"blk.{il}."
        w.add_tensor(b + "attn_norm.weight", norm(N_EMBD))
        w.add_tensor(b + "attn_q.weight", matrix(q, N_EMBD))
        w.add_tensor(b + "attn_k.weight", matrix(kv, N_EMBD))
        w.add_tensor(b + "attn_v.weight", matrix(kv, N_EMBD))
        w.add_tensor(b + "attn_q_norm.weight", norm(HEAD_DIM))
        w.add_tensor(b + "attn_k_norm.weight", norm(HEAD_DIM))
        w.add_tensor(b + "attn_output.weight", matrix(N_EMBD, q))
        w.add_tensor(b + "ffn_norm.weight", norm(N_EMBD))
        w.add_tensor(b + "ffn_gate.weight", matrix(N_FF, N_EMBD))
        w.add_tensor(b + "ffn_up.weight", matrix(N_FF, N_EMBD))
        w.add_tensor(b + "ffn_down.weight", matrix(N_EMBD, N_FF))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def quantize(src: str, dst: str) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), params)
    if rc != 0:
        sys.exit(f"llama_model_quantize({src} → {dst}) failed with {rc}")


def main() -> None:
    cache = cache_dir()
    models = os.path.join(cache, "models")
    os.makedirs(models, exist_ok=True)
    out = os.path.join(models, FILE_NAME)
    tokens, types, merges = vocabulary(os.path.join(cache, "vocab", "ggml-vocab-qwen2.gguf"))
    f16 = out + ".f16.tmp"
    part = out + ".part"
    write_f16(f16, tokens, types, merges)
    try:
        quantize(f16, part)
    finally:
        os.remove(f16)
    os.replace(part, out)
    counts: dict[str, int] = {}
    for t in gguf.GGUFReader(out).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    digest = hashlib.sha256()
    with open(out, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    print(f"wrote {out}: {os.path.getsize(out):,} bytes, sha256 {digest.hexdigest()}, tensors {counts}")


if __name__ == "__main__":
    main()
