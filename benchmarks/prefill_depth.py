"""Prompt evaluation against the depth of what is already in the context.

A cascade question evaluates a few hundred new tokens behind a restored prefix of thousands
(`profile_embedded.py`). This measures whether that depth costs: for each depth D, the
model's KV cache is filled with D tokens of a real memory file, then N new tokens are
evaluated and timed (wall time of `Llama.eval`), against the same N tokens evaluated on an
empty context. Same engine settings as memeval's local back end (its n_ctx, n_batch, threads).

    .venv/bin/python benchmarks/prefill_depth.py [--model qwen2.5-coder-1.5b] [--new 360]
"""

from __future__ import annotations

import argparse
import time

from _common import machine, table
from models import memory_file

from memeval.models.local import N_CTX
from memeval.models.spec import local_threads
from memeval.models.weights import ensure_weights, lookup

DEPTHS = (0, 1000, 2000, 4000, 6000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--new", type=int, default=360, help="new tokens evaluated per case")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from llama_cpp import Llama

    threads = local_threads()
    llama = Llama(
        model_path=str(ensure_weights(lookup(args.model))),
        n_ctx=N_CTX,
        n_threads=threads,
        n_threads_batch=threads,
        verbose=False,
    )
    text = "\n\n".join(memory_file() for _ in range(4))  # more tokens than the deepest case
    tokens = llama.tokenize(text.encode("utf-8"), add_bos=False)
    need = max(DEPTHS) + args.new
    if len(tokens) < need:
        raise SystemExit(f"the sample text has {len(tokens)} tokens, {need} are needed")
    new = tokens[max(DEPTHS) : max(DEPTHS) + args.new]  # the same new tokens at every depth

    print(f"machine: {machine()}")
    print(f"{args.model}, n_ctx {N_CTX}, {threads} threads, {args.new} new tokens per case\n")
    rows = []
    base_rate = 0.0
    for depth in DEPTHS:
        rates, fills = [], []
        for _ in range(args.rounds):
            llama.reset()
            started = time.perf_counter()
            if depth:
                llama.eval(tokens[:depth])
            fills.append(time.perf_counter() - started)
            started = time.perf_counter()
            llama.eval(new)
            rates.append(len(new) / (time.perf_counter() - started))
        rate = max(rates)  # the least disturbed round
        base_rate = base_rate or rate
        fill_rate = depth / min(fills) if depth else 0.0
        rows.append(
            [depth, f"{rate:.1f}", f"{args.new / rate:.2f}", f"{rate / base_rate:.2f}x",
             f"{fill_rate:.0f}" if depth else "-"]
        )  # fmt: skip
    print(
        table(
            ["depth (tokens)", "new tok/s", "s per new block", "vs empty", "fill tok/s"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
