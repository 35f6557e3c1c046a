"""The fused attention kernel alone: forward and forward+backward, today's source against the
kernel at ``--pinned COMMIT``, on the zoo's attention shapes, with the outputs compared.

Each version runs in its own process on one XLA device (a training step gives each device half
the batch, so the default shapes are a device's half: ``[8, 128, 12, 16]`` lesson,
``[8, 128, 4, 32]`` matched); rounds alternate between the two processes, since this VM's speed
drifts from minute to minute. A kernel compiles on first use from its own source (cached per
source under ``ROPEBOOK_CACHE/kernels``), so the pinned commit's ``src/`` (``git archive``)
builds its own. Prints milliseconds per call (the best round) and the ratio, and whether the
two kernels' forward outputs and gradients are bit for bit the same.

    .venv/bin/python benchmarks/attention_kernel.py --pinned COMMIT [--shapes 8,128,12,16 ...]
        [--window N | --chunk N] [--rounds 5] [--calls 200]   # local attention: a sliding window
                                                              # or chunks (the layouts chapter's)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from train_throughput import extract_src

DEFAULT_SHAPES = ("8,128,12,16", "8,128,4,32")


def worker(conn, src: str | None, shapes: list[tuple[int, ...]], calls: int, local: dict) -> None:
    """One version of the kernel: reply ``(forward ms, forward+backward ms)`` per shape whenever
    the parent asks, after sending every shape's outputs and gradients once."""
    os.environ["ROPEBOOK_CPU_DEVICES"] = "1"
    os.environ["ROPEBOOK_ATTENTION"] = "fused"
    if src is not None:
        import sys

        sys.path.insert(0, src)
    import jax
    import jax.numpy as jnp

    from ropebook import attention

    def attend(q, k, v):
        return attention.causal_attention(q, k, v, **local)

    forward = jax.jit(attend)
    both = jax.jit(jax.grad(lambda q, k, v: jnp.sum(attend(q, k, v) * v), (0, 1, 2)))
    inputs = [
        tuple(jax.random.normal(key, shape) for key in jax.random.split(jax.random.key(0), 3))
        for shape in shapes
    ]
    conn.send([
        np.concatenate([np.ravel(forward(*args))] + [np.ravel(g) for g in both(*args)])
        for args in inputs
    ])  # fmt: skip

    def per_call(function, args) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            result = function(*args)
        jax.block_until_ready(result)
        return (time.perf_counter() - start) / calls * 1e3

    while conn.recv():
        conn.send([(per_call(forward, args), per_call(both, args)) for args in inputs])


def main() -> None:
    import multiprocessing

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pinned", metavar="COMMIT", required=True)
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="B,T,H,D")
    local = parser.add_mutually_exclusive_group()
    local.add_argument("--window", type=int, help="each query sees its last N keys")
    local.add_argument("--chunk", type=int, help="each query sees the keys of its own chunk")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200, help="calls timed per round")
    args = parser.parse_args()
    shapes = [tuple(int(n) for n in text.split(",")) for text in args.shapes]
    local = {"window": args.window, "chunk": args.chunk}
    versions = {f"@ {args.pinned}": extract_src(args.pinned), "now": None}
    context = multiprocessing.get_context("spawn")
    workers, outputs = {}, {}
    for name, src in versions.items():
        parent, child = context.Pipe()
        process = context.Process(target=worker, args=(child, src, shapes, args.calls, local))
        process.start()
        outputs[name] = parent.recv()
        workers[name] = (parent, process)
    times = {name: [] for name in workers}
    for _ in range(args.rounds):
        for name, (conn, _) in workers.items():
            conn.send(True)
            times[name].append(conn.recv())
    for conn, process in workers.values():
        conn.send(False)
        process.join()
    pinned, now = versions
    for i, shape in enumerate(shapes):
        same = np.array_equal(outputs[pinned][i], outputs["now"][i])
        largest = float(np.max(np.abs(outputs[pinned][i] - outputs["now"][i])))
        print(f"{list(shape)}: outputs and gradients {'identical' if same else 'differ'} "
              f"(largest difference {largest:.2g})")  # fmt: skip
        for j, what in enumerate(("forward", "forward+backward")):
            best = {name: min(t[i][j] for t in times[name]) for name in times}
            print(f"  {what:17s} {pinned} {best[pinned]:.3f} ms, now {best[now]:.3f} ms: "
                  f"{best[pinned] / best[now]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
