"""llama.cpp engine options, one at a time, on the work an embedded cascade call does.

An updater call evaluates a few hundred new tokens behind a restored prefix of thousands and
generates a handful (`profile_embedded.py`, `prefill_depth.py`). For each variant below, one
`Llama` is loaded with memeval's settings plus that one change; its KV cache is filled with
DEPTH tokens of a real memory file, then NEW tokens are evaluated (timed), then GEN tokens are
generated greedily (timed). Each variant runs `--rounds` times and keeps its least disturbed
round; before the first, one unmeasured pass of the first variant warms the machine (without
it whichever variant ran first measured up to 20% slower). Variants (each differs from
`default` in one option only):

- default:      memeval's engine settings (n_ctx 8192, n_batch and n_ubatch CHUNK, all cores)
- flash:        flash attention on
- kv-q8:        flash attention on, K and V caches in q8_0 (V quantisation needs flash)
- batch-32, batch-128, batch-256, batch-512: n_batch and n_ubatch 32 … 512 (512: llama-cpp-python's
                default, and memeval's before prefixes were reused in whole chunks)
- ubatch-1024:  n_batch and n_ubatch 1024
- threads-1:    one thread (the other core left free, e.g. for a second job)

    .venv/bin/python benchmarks/llama_options.py [--model qwen2.5-coder-1.5b] [--depth 4000]
        [--new 360] [--gen 32] [--variants default,flash,...]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from _common import machine, table
from models import memory_file

from memeval.models.local import CHUNK, N_CTX
from memeval.models.spec import local_threads
from memeval.models.weights import ensure_weights, lookup


def variants(threads: int) -> dict[str, dict[str, Any]]:
    import llama_cpp

    q8 = llama_cpp.GGML_TYPE_Q8_0

    def batch(n: int) -> dict[str, Any]:
        return {"n_batch": n, "n_ubatch": n}

    return {
        "default": {},
        "flash": {"flash_attn": True},
        "kv-q8": {"flash_attn": True, "type_k": q8, "type_v": q8},
        "batch-32": batch(32),
        "batch-128": batch(128),
        "batch-256": batch(256),
        "batch-512": batch(512),
        "ubatch-1024": batch(1024),
        "threads-1": {"n_threads": 1, "n_threads_batch": 1} if threads > 1 else {},
    }


def measure(
    make: Callable[[], Any], depth: int, new: int, gen: int, rounds: int
) -> tuple[float, float, float, float]:
    """(load s, fill tok/s, new-token tok/s, generation tok/s), best round of each."""
    started = time.perf_counter()
    llama = make()
    load_s = time.perf_counter() - started
    text = "\n\n".join(memory_file() for _ in range(4))
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=False)
    if len(tokens) < depth + new:
        raise SystemExit(f"the sample text has {len(tokens)} tokens, {depth + new} are needed")
    fills, evals, gens = [], [], []
    for _ in range(rounds):
        llama.reset()
        started = time.perf_counter()
        llama.eval(tokens[:depth])
        fills.append(depth / (time.perf_counter() - started))
        started = time.perf_counter()
        llama.eval(tokens[depth : depth + new])
        evals.append(new / (time.perf_counter() - started))
        started = time.perf_counter()
        for _ in range(gen):
            token = llama.sample(temp=0.0)
            llama.eval([token])
        gens.append(gen / (time.perf_counter() - started))
    del llama
    return load_s, max(fills), max(evals), max(gens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--depth", type=int, default=4000, help="tokens already in the context")
    parser.add_argument("--new", type=int, default=360, help="new tokens evaluated per round")
    parser.add_argument("--gen", type=int, default=32, help="tokens generated per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default="", help="comma list (default: all)")
    args = parser.parse_args()

    from llama_cpp import Llama

    threads = local_threads()
    path = str(ensure_weights(lookup(args.model)))
    chosen = variants(threads)
    names = [n for n in args.variants.split(",") if n] or list(chosen)
    unknown = [n for n in names if n not in chosen]
    if unknown:
        raise SystemExit(f"unknown variant {unknown[0]!r} (valid: {', '.join(chosen)})")

    print(f"machine: {machine()}")
    print(
        f"{args.model}, n_ctx {N_CTX}, {threads} threads by default; depth {args.depth}, "
        f"{args.new} new tokens, {args.gen} generated, best of {args.rounds} rounds\n"
    )
    rows = []
    base: tuple[float, float] | None = None
    for n, name in enumerate(names):
        options = {
            "n_threads": threads,
            "n_threads_batch": threads,
            "n_batch": CHUNK,
            "n_ubatch": CHUNK,
            **chosen[name],
        }

        def make(options: dict[str, Any] = options) -> Any:
            return Llama(model_path=path, n_ctx=N_CTX, seed=0, verbose=False, **options)

        if n == 0:
            measure(make, args.depth, args.new, args.gen, 1)  # warm-up, not reported
        load_s, fill, rate, gen = measure(make, args.depth, args.new, args.gen, args.rounds)
        base = base or (rate, gen)
        call_s = args.new / rate + args.gen / gen
        rows.append(
            [name, f"{load_s:.1f}", f"{fill:.0f}", f"{rate:.1f}", f"{rate / base[0]:.2f}x",
             f"{gen:.1f}", f"{gen / base[1]:.2f}x", f"{call_s:.2f}"]
        )  # fmt: skip
    print(
        table(
            ["variant", "load s", "fill tok/s", "new tok/s", "vs default", "gen tok/s",
             "vs default", f"s per call ({args.new} new + {args.gen} gen)"],
            rows,
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
