"""XLA's CPU options and the device layout, against today's default, on one training step.

Each configuration runs the zoo's RoPE training step (``ropebook.train``) in a fresh process
with its ``XLA_FLAGS`` (JAX reads them once, at start), configurations alternating within each
of ``--launches`` launches so machine load affects all alike. Prints tokens/s (median of
rounds), the ratio to the default, and the loss after the timed steps from the same start: an
option that moves it beyond float32 rounding changes the book's numbers and is no candidate.

    .venv/bin/python benchmarks/xla_flags.py [--regime lesson] [--launches 2] [--configs NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

CONFIGS: dict[str, str] = {
    "default (one device per core)": "",
    "one device, Eigen's threads": "--xla_force_host_platform_device_count=1",
    "512-bit vectors": "--xla_cpu_prefer_vector_width=512",
    "oneDNN dots": "--xla_cpu_experimental_onednn_fusion_type=dot",
    "XNNPACK dots": "--xla_cpu_experimental_xnn_fusion_type=dot",
    "XNNPACK dots+eltwise": "--xla_cpu_experimental_xnn_fusion_type=dot,eltwise",
    "XNNPACK graph (greedy)": "--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY",
    "YNNPACK dots": "--xla_cpu_experimental_ynn_fusion_type=dot",
    "512-bit vectors, XNNPACK dots": "--xla_cpu_prefer_vector_width=512 "
    "--xla_cpu_experimental_xnn_fusion_type=dot",
    "each device's ops on one thread": "--xla_cpu_multi_thread_eigen=false",
    "no parallel codegen split": "--xla_cpu_parallel_codegen_split_count=1",
    "concurrency-optimised scheduler": "--xla_cpu_enable_concurrency_optimized_scheduler=true",
}

WORKER = """
import json, sys, time
import numpy as np
import jax
from ropebook import model, runtime, train, zoo
cfg, tc = zoo.configs("rope", seed=0, profile=sys.argv[1], regime=sys.argv[2])
steps, rounds = int(sys.argv[3]), int(sys.argv[4])
params = model.init_params(jax.random.key(0), cfg)
state = train.make_optimizer(tc).init(params)
batch_sharding, replicated = runtime.data_parallel(tc.batch_size)
params, state = jax.device_put((params, state), replicated)
tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (tc.batch_size, cfg.context + 1))
batch = jax.device_put(tokens.astype(np.int32), batch_sharding)
step = train.train_step(cfg, tc)
params, state, loss, _ = step(params, state, batch)
jax.block_until_ready(loss)
times = []
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(steps):
        params, state, loss, _ = step(params, state, batch)
    jax.block_until_ready(loss)
    times.append((time.perf_counter() - start) / steps)
print(json.dumps({"seconds": float(np.median(times)), "loss": float(loss),
                  "devices": len(jax.devices()), "tokens": tc.batch_size * cfg.context}))
"""


def run(flags: str, args) -> dict:
    env = os.environ | {"XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
    command = [
        sys.executable,
        "-c",
        WORKER,
        args.profile,
        args.regime,
        str(args.steps),
        str(args.rounds),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--regime", default="lesson")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--configs", nargs="+", choices=tuple(CONFIGS), default=tuple(CONFIGS))
    args = parser.parse_args()
    results: dict[str, list[dict]] = {name: [] for name in args.configs}
    for _ in range(args.launches):
        for name in args.configs:
            results[name].append(run(CONFIGS[name], args))
    base = results[args.configs[0]]
    base_rate = np.median([r["tokens"] / r["seconds"] for r in base if "seconds" in r])
    base_loss = base[0].get("loss")
    print(f"{args.regime} regime, {args.profile} profile; {args.launches} launches, median of "
          f"{args.rounds} rounds of {args.steps} steps each")  # fmt: skip
    for name, runs in results.items():
        if errors := [r["error"] for r in runs if "error" in r]:
            print(f"{name:32s} failed: {errors[0]}")
            continue
        rate = np.median([r["tokens"] / r["seconds"] for r in runs])
        drift = abs(runs[0]["loss"] - base_loss)
        print(
            f"{name:32s} {rate:9,.0f} tokens/s  {rate / base_rate:5.2f}x  "
            f"loss {runs[0]['loss']:.6f} (|diff| {drift:.1e})  {CONFIGS[name] or '(none)'}"
        )


if __name__ == "__main__":
    main()
