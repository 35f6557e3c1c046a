"""Training throughput: our JAX step against the same model in PyTorch eager, on this CPU.

Same shapes (the zoo's ``cpu`` profile by default), same maths (pre-norm RMSNorm, fused QKV,
RoPE with the half pairing, causal attention, ReLU² MLP, tied output, AdamW with global-norm
clipping), same batch. PyTorch uses ``scaled_dot_product_attention(is_causal=True)``; ours runs
twice: with the fused C++ attention kernel (:mod:`ropebook.attention`,
``ROPEBOOK_ATTENTION=fused``) and with XLA's attention (``ROPEBOOK_ATTENTION=xla``). "ours" is the
one of the two that ``ROPEBOOK_ATTENTION=auto`` (the default) picks on this shape and machine, by
its own measurement (printed, with its timings), so the run shows whether it picked the faster.
``ROPEBOOK_KERNEL_LANES=16`` (or 8) compiles the kernel with other tiles than this CPU's vector
width, to compare. Runs alternate between the frameworks so machine load affects all alike.

Each framework runs in its own process (one at a time, rounds alternating), since PyTorch's
OpenMP threads slow JAX in a shared process, and the whole set is launched ``--launches`` times
afresh, since one process's speed varies more than its rounds do. Prints tokens/s of each, the ratio ours / PyTorch, and model FLOPs utilisation (MFU) against the
float32 matmul throughput measured on this machine (so MFU is relative to what this CPU can
actually do, not a datasheet number): once before the runs, and after every round, against which
each round's MFU is counted (the median over rounds is printed beside the first reading).

    .venv/bin/python benchmarks/train_throughput.py [--profile cpu] [--regime lesson|matched]
        [--rounds 5] [--steps 15] [--launches 3] [--runners "ours, fused" "ours, XLA attn"]
        [--pinned COMMIT]   # also the library at COMMIT (its src/, by git archive), side by side
    ROPEBOOK_TUNE_MALLOC=0 .venv/bin/python benchmarks/train_throughput.py   # glibc defaults
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def model_flops_per_token(cfg) -> float:
    """6·N (matmul parameters, output layer included) + attention's 12·L·T·d (fwd + bwd)."""
    d, hd = cfg.d_model, cfg.n_heads * cfg.head_dim
    per_layer = d * 3 * hd + hd * d + 2 * d * cfg.d_ff
    matmul_params = cfg.n_layers * per_layer + cfg.vocab_size * d
    return 6 * matmul_params + 12 * cfg.n_layers * cfg.context * hd


def peak_matmul_flops(n: int = 1024, repeats: int = 10, rounds: int = 5) -> float:
    """FLOP/s of numpy's float32 ``[n, n]`` product, the best of ``rounds`` timings of ``repeats``
    products: a peak, so the best (one timing moved from 131 to 293 GFLOP/s on one idle machine
    within an hour, 2026-11-28, and MFU with it)."""
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    a @ a
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            a @ a
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 * repeats / best


def jax_runner(cfg, tc, tokens, attention: str = "auto"):
    import os

    os.environ["ROPEBOOK_ATTENTION"] = attention  # read when the step is traced
    import jax

    from ropebook import model, runtime, train

    params = model.init_params(jax.random.key(0), cfg)
    optimizer = train.make_optimizer(tc)
    # as train.train places them and steps; a library pinned before 7af2bb8 names these privately
    shardings = getattr(runtime, "data_parallel", None) or train._shardings
    batch_sharding, replicated = shardings(tc.batch_size)
    params, state = jax.device_put((params, optimizer.init(params)), replicated)
    step = (getattr(train, "train_step", None) or train._train_step)(cfg, tc)
    batch = jax.device_put(tokens.astype(np.int32), batch_sharding)

    def run(n: int) -> None:
        nonlocal params, state
        for _ in range(n):
            params, state, loss, _ = step(params, state, batch)
        jax.block_until_ready(loss)

    return run


def torch_runner(cfg, tc, tokens, compile: bool = False):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    d, h, hd, t = cfg.d_model, cfg.n_heads, cfg.head_dim, cfg.context

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = torch.nn.RMSNorm(d, eps=1e-6), torch.nn.RMSNorm(d, eps=1e-6)
            self.qkv = torch.nn.Linear(d, 3 * h * hd, bias=False)
            self.out = torch.nn.Linear(h * hd, d, bias=False)
            self.up = torch.nn.Linear(d, cfg.d_ff, bias=False)
            self.down = torch.nn.Linear(cfg.d_ff, d, bias=False)

        def forward(self, x, cos, sin):
            b = x.shape[0]
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, h, hd).transpose(1, 3).unbind(2)

            def rotate(z):
                first, second = z.chunk(2, dim=-1)
                return z * cos + torch.cat([-second, first], dim=-1) * sin

            y = F.scaled_dot_product_attention(rotate(q), rotate(k), v, is_causal=True)
            x = x + self.out(y.transpose(1, 2).reshape(b, t, h * hd))
            return x + self.down(F.relu(self.up(self.norm2(x))).square())

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(cfg.vocab_size, d)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.norm = torch.nn.RMSNorm(d, eps=1e-6)
            freqs = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)
            angles = torch.outer(torch.arange(t, dtype=torch.float32), freqs)
            self.register_buffer("cos", torch.cat([angles, angles], -1).cos())
            self.register_buffer("sin", torch.cat([angles, angles], -1).sin())

        def forward(self, ids):
            x = self.embed(ids)
            for block in self.blocks:
                x = block(x, self.cos, self.sin)
            return self.norm(x) @ self.embed.weight.T

    net = Model()
    forward = torch.compile(net) if compile else net
    optimizer = torch.optim.AdamW(net.parameters(), lr=tc.lr, betas=(tc.b1, tc.b2), weight_decay=tc.weight_decay)  # fmt: skip
    batch = torch.as_tensor(tokens, dtype=torch.long)

    def run(n: int) -> None:
        for _ in range(n):
            logits = forward(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), batch[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), tc.clip)
            optimizer.step()

    return run


RUNNERS = {
    "ours, fused": lambda cfg, tc, tokens: jax_runner(cfg, tc, tokens, attention="fused"),
    "ours, XLA attn": lambda cfg, tc, tokens: jax_runner(cfg, tc, tokens, attention="xla"),
    "PyTorch eager": lambda cfg, tc, tokens: torch_runner(cfg, tc, tokens),
    "torch.compile": lambda cfg, tc, tokens: torch_runner(cfg, tc, tokens, compile=True),
}


PINNED = "ours @ "  # runner name prefix of the library at another commit (--pinned)


def worker(conn, name: str, profile: str, regime: str, steps: int, pinned_src: str | None) -> None:
    """One framework in its own process: build and warm up, then time ``steps`` steps whenever
    the parent asks, replying seconds per step (or the error that stopped it). The pinned
    runner imports the library from ``pinned_src`` (that commit's ``src``) before anything else."""
    if name.startswith(PINNED):
        import sys

        sys.path.insert(0, pinned_src)
        RUNNERS[name] = lambda cfg, tc, tokens: jax_runner(cfg, tc, tokens, attention="auto")
    from ropebook import zoo

    cfg, tc = zoo.configs("rope", seed=0, profile=profile, regime=regime)
    tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, (tc.batch_size, cfg.context + 1))
    try:
        run = RUNNERS[name](cfg, tc, tokens)
        run(3)  # compile / warm up
    except Exception as error:  # inductor needs a working C++ toolchain
        conn.send(f"{type(error).__name__}: {error}")
        return
    conn.send("ready")
    while conn.recv():
        start = time.perf_counter()
        run(steps)
        conn.send((time.perf_counter() - start) / steps)


def launch_and_time(args) -> tuple[dict[str, list[float]], list[float]]:
    """Start one process per framework, warm each up, then time ``args.rounds`` rounds,
    alternating between them (one runs at a time): ``{framework: [seconds per step]}``, and the
    matmul peak measured after each round while every framework waits (``[FLOP/s]``), so each
    round's MFU is counted against this machine's speed at that moment (it drifts by 10-20 %
    within minutes on these VMs, and MFU with it).

    Separate processes because in one process PyTorch's OpenMP threads alone slowed the JAX
    step by ~15 %; fresh launches because a process's speed varies more than its rounds do."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    runners = {}
    for name in args.runners:
        parent, child = context.Pipe()
        process = context.Process(
            target=worker,
            args=(child, name, args.profile, args.regime, args.steps, args.pinned_src),
        )
        process.start()
        reply = parent.recv()  # one warms up at a time
        if reply == "ready":
            runners[name] = (parent, process)
        else:
            print(f"{name}: skipped, it failed to run here ({reply})")
            process.join()
    seconds, peaks = {name: [] for name in runners}, []
    for _ in range(args.rounds):
        for name, (conn, _) in runners.items():
            conn.send(True)
            seconds[name].append(conn.recv())
        peaks.append(peak_matmul_flops(rounds=3))
    for conn, process in runners.values():
        conn.send(False)
        process.join()
    return seconds, peaks


def extract_src(commit: str) -> str:
    """``src/`` of the repository at ``commit``, unpacked into a temporary folder (``git
    archive``: the work tree is not touched); returns the folder's ``src``."""
    import subprocess
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp(prefix=f"ropebook-{commit}-"))
    archive = subprocess.run(
        ["git", "archive", commit, "src"], cwd=repo, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return str(folder / "src")


def auto_pick(cfg, tc):
    """The runner ``ROPEBOOK_ATTENTION=auto`` amounts to for this model, and its measured choice
    (``None`` where the kernel does not apply): its decision for the step's attention shape."""
    from ropebook import attention

    if attention.lanes() is None or cfg.head_dim % attention.LANES:
        return "ours, XLA attn", None
    choice = attention.choose((tc.batch_size, cfg.context, cfg.n_heads, cfg.head_dim))
    return ("ours, fused" if choice.path == "fused" else "ours, XLA attn"), choice


def main() -> None:
    from ropebook import runtime, zoo

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu", choices=tuple(zoo.PROFILES))
    parser.add_argument("--regime", default="lesson", choices=zoo.REGIMES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--launches", type=int, default=3, help="fresh sets of processes")
    parser.add_argument("--runners", nargs="+", choices=tuple(RUNNERS), default=tuple(RUNNERS))
    parser.add_argument("--pinned", metavar="COMMIT", help="also time the library at COMMIT")
    args = parser.parse_args()
    args.pinned_src = None
    if args.pinned:
        args.pinned_src = extract_src(args.pinned)
        args.runners = (f"{PINNED}{args.pinned}", *args.runners)
    cfg, tc = zoo.configs("rope", seed=0, profile=args.profile, regime=args.regime)
    ours, choice = auto_pick(cfg, tc)  # before the workers start, so they do not slow it
    peak = peak_matmul_flops()
    tokens_per_step = tc.batch_size * cfg.context
    flops = model_flops_per_token(cfg)
    seconds: dict[str, list[float]] = {}
    ratios, round_peaks = [], []
    mfu_by_round: dict[str, list[float]] = {}
    for launch in range(args.launches):
        these, peaks = launch_and_time(args)
        round_peaks += peaks
        for name, times in these.items():
            seconds.setdefault(name, []).extend(times)
            mfu_by_round.setdefault(name, []).extend(
                flops * tokens_per_step / s / p for s, p in zip(times, peaks, strict=True)
            )
        if ours in these and "PyTorch eager" in these:
            ratios.append(np.median(these["PyTorch eager"]) / np.median(these[ours]))
            print(f"launch {launch + 1}: ours / PyTorch eager {ratios[-1]:.2f}")
    print(f"model: {args.profile} profile, {args.regime} regime, {cfg.n_layers} layers, d={cfg.d_model}, "
          f"{cfg.n_heads}x{cfg.head_dim} heads, batch {tc.batch_size}x{cfg.context}")  # fmt: skip
    print(f"float32 matmul peak measured here: {peak / 1e9:.1f} GFLOP/s before the runs; after "
          f"each round {np.median(round_peaks) / 1e9:.1f} (median; "
          f"{min(round_peaks) / 1e9:.1f}-{max(round_peaks) / 1e9:.1f})")  # fmt: skip
    print(f"JAX CPU devices: {runtime.split_cpu_devices()} (ropebook.runtime: one per core, each "
          "batch sharded over them)")  # fmt: skip
    from ropebook import attention

    print(f"fused kernel tiles: {attention.lanes()} floats per vector")
    print(f"ROPEBOOK_ATTENTION=auto picks '{ours}': {choice or 'the kernel does not apply'}")
    print(f"allocator tuned (ropebook.runtime, applies to every framework's process): "
          f"{runtime.tune_allocator()}")  # fmt: skip
    rate = {}
    print("MFU: against the peak before the runs; per round, against the peak measured after it "
          "(median over rounds)")  # fmt: skip
    for name, times in seconds.items():
        rate[name] = tokens_per_step / float(np.median(times))
        print(f"{name:14s} {rate[name]:9,.0f} tokens/s   MFU {rate[name] * flops / peak:6.1%}"
              f"   per round {np.median(mfu_by_round[name]):6.1%}")  # fmt: skip
    if ours not in rate:
        return
    print(f"ours (auto) = {ours}: {rate[ours]:,.0f} tokens/s")
    for name in seconds:
        if name != ours:
            print(f"ratio ours / {name} (all rounds pooled): {rate[ours] / rate[name]:.2f}")
    if ratios:
        print(f"ratio ours / PyTorch eager, median over {len(ratios)} launches: "
              f"{np.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
