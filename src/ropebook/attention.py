"""Causal attention, both paths: XLA's own ops and a fused C++ kernel for XLA's CPU backend.

:func:`attend` is what the model calls: the fused kernel where it applies and was measured
faster on this machine and shape, else :func:`xla_attention`. This module imports nothing from
:mod:`ropebook.model` (which imports it).

**Local attention**, in both paths: a sliding ``window`` (query ``i`` sees keys ``i - window + 1
.. i``: Gemma's and Cohere2's ``sliding_window``) or a ``chunk`` (query ``i`` sees the keys of
its own chunk of ``chunk`` tokens up to itself: Llama 4's ``attention_chunk_size``); see
:func:`first_keys`. XLA's path masks the keys a query does not see; the kernel takes window and
chunk as attributes and skips every tile of keys that no query of a block sees, forward and
backward. Both agree with a dense masked reference (``tests/test_attention.py``). ``auto``
measures its choice on full causal attention of the shape, and it holds for local layers too, so
a model takes one path in every layer (the one its provenance records).

**XLA's path.** :func:`xla_attention`, three choices, each measured on 2 CPU cores: heads move
next to batch so both products are plain batched matmuls; the causal mask is one additive
``[T, T]`` constant folded into the bias; and the softmax is normalised *after* multiplying by
``v`` (``(e @ v) / sum(e)``), which skips a full ``[B, H, T, T]`` pass forward and backward.
Attention forward+backward ran 2× faster than ``jax.nn.dot_product_attention(is_causal=True)``.

**Why a kernel.** With heads of 16 dimensions, attention is many tiny products, and XLA computes each
``[B, H, T, T]`` array of scores, probabilities and their gradients in full (the masked half
included) and writes it to memory: in a training step of the ``cpu`` zoo model it took ~45 of
~140 ms. PyTorch's CPU ``scaled_dot_product_attention`` avoids both, which is where its step
was ahead of ours. ``kernels/causal_attention.cc`` does the same for XLA: per (sequence, head)
it works in tiles that stay in L1, computes only the causal half, and recomputes probabilities
in the backward pass from the saved log-sum-exp (as FlashAttention does); measured in
``benchmarks/train_throughput.py``.

**How.** On first use the source is compiled with the system C++ compiler (``$CXX``, else
``c++``) into ``CACHE_DIR/kernels``, under a name that hashes the source, the flags, the
compiler's version and this CPU's instruction sets (it is built with ``-march=native``, so a
cache shared by different machines holds one library per kind of CPU). Its tiles are one vector
register wide for the instruction set compiled for (16 floats under AVX-512, 8 under AVX2; the
source picks it from the compiler's target macros, :func:`lanes` reports it): 16-float tiles on
an AVX2 CPU (AMD EPYC, 2 cores) ran attention forward+backward ~4× slower than 8-float ones,
slower than XLA's own attention. The file is written
under a temporary name and renamed, so concurrent processes never load half a library, and its
sha256 is recorded beside it and checked before every load. Its two
handlers are registered as FFI targets; :func:`causal_attention` ties them together with
``jax.custom_vjp``, ``custom_partitioning`` (a batch sharded over devices stays sharded: each
device runs the kernel on its own sequences) and ``custom_vmap`` (vmapped models fold the
vmapped axis into the batch). Each call also takes an empty operand whose shape holds its window
and chunk (:func:`_tag`), so that JAX's persistent compilation cache can key programs without the
per-process id of the partitioning callback and still tell local attentions apart.

**When.** :func:`applies` says whether the model's training path uses it: float32, no additive
score bias (every rotary encoding and NoPE; ALiBi, Kerple and FIRE keep XLA's path), a head
dimension that is a multiple of 16, and the CPU backend. ``ROPEBOOK_ATTENTION`` chooses:
``auto`` (default: where the kernel applies and builds, the faster of the two paths on this
machine and shape, measured; a failed build warns once and falls back), ``fused`` (a failed
build is an error) or ``xla`` (never fused). Results agree with XLA's attention to float32
rounding (``tests/test_attention.py``).

**Auto, measured.** Which path is faster depends on the CPU (on an AVX2 CPU whose kernel had
AVX-512-sized tiles, XLA's was) and on the shape (with few, wide heads XLA's own products are
large enough). So ``auto`` times a forward+backward of attention on the shape about to run,
both paths alternating, the batch sharded over the devices as in training (:func:`choose`):
the rest of a training step is the same program either way. It does so once per CPU model,
instruction sets, shape, device count, JAX version and kernel build, stores the decision as
JSON beside the kernel, and prints it once per process with both timings. A path therefore
changes only where a new measurement is made; a run's numbers are fixed by the decision file.
A timing taken while other processes kept the CPUs busy (more than :data:`CONTENDED` of them,
read from ``/proc/stat``) can pick the wrong path for good, so such a decision records how busy
they were and is measured again by later runs until one is taken on a quieter machine.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import functools
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

from ropebook import io

MODES = ("auto", "fused", "xla")
SOURCE = Path(__file__).with_name("kernels") / "causal_attention.cc"
FLAGS = ("-O3", "-march=native", "-std=c++17", "-shared", "-fPIC", "-fno-math-errno", "-w")
LANES = 16  # head dims must be a multiple: of the kernel's widest vector (16 floats, AVX-512)
_FORWARD, _BACKWARD = "ropebook_causal_attention_forward", "ropebook_causal_attention_backward"


class KernelBuildError(RuntimeError):
    """The C++ kernel could not be compiled or loaded; the message has the compiler's output."""


def mode() -> str:
    """``ROPEBOOK_ATTENTION`` (default ``auto``); an unknown value is an error naming it."""
    value = os.environ.get("ROPEBOOK_ATTENTION", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"ROPEBOOK_ATTENTION must be one of {', '.join(MODES)}; got {value!r}")
    return value


def _compiler() -> str:
    return os.environ.get("CXX") or "c++"


def _flags() -> tuple[str, ...]:
    """:data:`FLAGS`, plus ``-DROPEBOOK_LANES=N`` where ``ROPEBOOK_KERNEL_LANES`` overrides the
    vector width the kernel picks for the instruction set it is compiled for (benchmarks)."""
    lanes = os.environ.get("ROPEBOOK_KERNEL_LANES", "").strip()
    if not lanes:
        return FLAGS
    if lanes not in ("8", "16"):
        raise ValueError(f"ROPEBOOK_KERNEL_LANES must be 8 or 16 (floats); got {lanes!r}")
    return (*FLAGS, f"-DROPEBOOK_LANES={lanes}")


def _cpu_signature() -> str:
    """Instruction sets of this CPU (what ``-march=native`` compiles for)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return platform.machine() + line
    except OSError:
        pass
    return platform.machine() + platform.processor()


@functools.cache
def _compiler_version(compiler: str) -> str:
    try:
        return subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError) as error:
        raise KernelBuildError(f"no C++ compiler {compiler!r}: {error}") from error


def library_path() -> Path:
    """Where the compiled kernel for this source, compiler and CPU lives (built or not)."""
    from ropebook import CACHE_DIR

    fields = [SOURCE.read_text(), *_flags(), _compiler_version(_compiler()), _cpu_signature()]
    key = hashlib.sha256("\n".join([*fields, jax.__version__]).encode()).hexdigest()[:16]
    return Path(CACHE_DIR) / "kernels" / f"causal_attention-{key}.so"


def build() -> Path:
    """Compile the kernel unless this exact build is cached and intact; returns its path.

    A library whose sha256 does not match the one recorded beside it at build time (truncated
    or changed on disk) is compiled again: loading a damaged shared library can crash the
    process instead of raising an error.
    """
    path = library_path()
    checksum = path.with_suffix(".sha256")
    if path.exists() and checksum.exists() and io.sha256_file(path) == checksum.read_text():
        return path
    command = [_compiler(), *_flags(), "-I", jax.ffi.include_dir(), str(SOURCE), "-o"]
    with io.atomic_path(path) as partial:
        result = subprocess.run([*command, str(partial)], capture_output=True, text=True)
        if result.returncode != 0:
            raise KernelBuildError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
        digest = io.sha256_file(partial)
    io.write_bytes_atomic(checksum, digest.encode())
    return path


@functools.cache
def _library() -> ctypes.CDLL:
    if shutil.which(_compiler()) is None:
        raise KernelBuildError(f"no C++ compiler {_compiler()!r} on PATH")
    return ctypes.CDLL(str(build()))


@functools.cache
def _registered() -> bool:
    """Build, load and register the kernel once per process; ``False`` if it cannot be (auto)."""
    try:
        library = _library()
    except (KernelBuildError, OSError) as error:
        if mode() == "fused":
            raise KernelBuildError(f"ROPEBOOK_ATTENTION=fused, but {error}") from error
        warnings.warn(f"fused attention unavailable, using XLA's: {error}", stacklevel=3)
        return False
    for name, symbol in ((_FORWARD, "RopebookCausalAttentionForward"),
                         (_BACKWARD, "RopebookCausalAttentionBackward")):  # fmt: skip
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, symbol)), "cpu")
    return True


def lanes() -> int | None:
    """Floats per vector in the loaded kernel (16 under AVX-512, else 8); ``None`` if unavailable."""
    if not _registered():
        return None
    width = _library().RopebookCausalAttentionLanes
    width.restype = ctypes.c_int64
    return int(width())


def _require() -> None:
    if not _registered():
        raise KernelBuildError("the fused attention kernel is unavailable (see the warning above)")


@dataclass(frozen=True)
class Decision:
    """The attention path inputs take (``"fused"`` or ``"xla"``), why, and with ``auto`` the
    measured :class:`Choice` behind it."""

    path: str
    reason: str
    choice: Choice | None = None


def decision(shape: tuple[int, ...], dtype=jnp.float32, *, bias: bool = False) -> Decision:
    """Which path attention over queries ``[B, T, H, D]`` of ``dtype`` (with a score ``bias``
    or not) takes on this machine, and why: the first case that applies of ``ROPEBOOK_ATTENTION``
    forcing XLA, what the kernel cannot do (biases, dtypes other than float32, head dims not a
    multiple of :data:`LANES`, backends other than the CPU, no kernel built), the setting forcing
    the kernel, else ``auto``'s measured decision (:func:`choose`)."""
    if mode() == "xla":
        return Decision("xla", "ROPEBOOK_ATTENTION=xla")
    if bias:
        return Decision("xla", "a score bias (ALiBi, Kerple, FIRE) keeps XLA's attention")
    if jnp.dtype(dtype) != jnp.float32:
        return Decision("xla", f"the fused kernel is float32, the inputs {jnp.dtype(dtype)}")
    if shape[-1] % LANES:
        return Decision("xla", f"head dim not a multiple of {LANES}")
    if jax.default_backend() != "cpu":
        return Decision("xla", "the fused kernel is for XLA's CPU backend")
    if not _registered():
        return Decision("xla", "the fused kernel did not build here")
    if mode() == "fused":
        return Decision("fused", "ROPEBOOK_ATTENTION=fused")
    choice = choose(tuple(shape))
    when = "measured now" if choice.measured_now else "measured earlier on this machine"
    return Decision(choice.path, f"auto: the faster on {list(choice.shape)}, {when}", choice)


def applies(q: jnp.ndarray, bias: jnp.ndarray | None) -> bool:
    """Whether :func:`causal_attention` should replace XLA's attention for these inputs: with
    ``auto``, where it can and :func:`choose` measured it faster on this shape (:func:`decision`)."""
    return decision(tuple(q.shape), q.dtype, bias=bias is not None).path == "fused"


def check_local(window: int | None, chunk: int | None) -> None:
    """Raise ``ValueError`` unless ``window`` and ``chunk`` are each ``None`` or a positive int."""
    for name, value in (("window", window), ("chunk", chunk)):
        if value is not None and (
            not isinstance(value, int | np.integer) or isinstance(value, bool) or value <= 0
        ):
            raise ValueError(f"attention {name} must be a positive integer or None, got {value!r}")


def first_keys(t: int, window: int | None = None, chunk: int | None = None) -> np.ndarray:
    """The first key each of ``t`` queries sees, ``[T]`` int: 0 under full causal attention;
    ``i - window + 1`` (at least 0) in a sliding window of ``window`` tokens, the query's own
    included (Gemma's and Cohere2's ``sliding_window``); ``i - i mod chunk`` in chunked attention
    (Llama 4's ``attention_chunk_size``: a query sees its own chunk only). Both: the later."""
    check_local(window, chunk)
    i = np.arange(t)
    first = np.zeros(t, dtype=np.int64)
    if window is not None:
        first = np.maximum(first, i - window + 1)
    if chunk is not None:
        first = np.maximum(first, i - i % chunk)
    return first


def visible(t: int, window: int | None = None, chunk: int | None = None) -> np.ndarray:
    """``[T, T]`` bool: whether query ``i`` (row) sees key ``j``: ``first_keys[i] <= j <= i``.
    Queries and keys are indexed by their place in the sequence, whatever positions they carry."""
    j = np.arange(t)
    return (j[None, :] <= j[:, None]) & (j[None, :] >= first_keys(t, window, chunk)[:, None])


def attend(
    q: jnp.ndarray,
    k: jnp.ndarray,
    v: jnp.ndarray,
    bias: jnp.ndarray | None = None,
    *,
    window: int | None = None,
    chunk: int | None = None,
) -> jnp.ndarray:
    """Causal softmax attention of ``[B, T, H, D]`` inputs with an optional score ``bias``
    ``[H, T, T]``, local where ``window`` or ``chunk`` is set (:func:`first_keys`), probabilities
    not kept: the fused kernel where :func:`applies`, else XLA's."""
    if applies(q, bias):
        return causal_attention(q, k, v, window=window, chunk=chunk)
    return xla_attention(q, k, v, bias, window=window, chunk=chunk)


def xla_attention(
    q: jnp.ndarray,
    k: jnp.ndarray,
    v: jnp.ndarray,
    bias: jnp.ndarray | None = None,
    *,
    window: int | None = None,
    chunk: int | None = None,
) -> jnp.ndarray:
    """:func:`attend` in XLA's own ops, never the fused kernel (what ``auto`` times it against);
    local attention is a mask here: the scores it hides are still computed."""
    mask = np.where(visible(q.shape[1], window, chunk), 0.0, -1e30)
    q, k, v = (jnp.swapaxes(a, 1, 2) for a in (q, k, v))  # [B, H, T, D]
    mask = jnp.asarray(mask, q.dtype)
    scores = (q * q.shape[-1] ** -0.5) @ jnp.swapaxes(k, -1, -2)
    scores = scores + (mask if bias is None else (bias + mask).astype(q.dtype))
    weights = jnp.exp(scores - jax.lax.stop_gradient(scores.max(axis=-1, keepdims=True)))
    out = (weights @ v) / weights.sum(axis=-1, keepdims=True)
    return jnp.swapaxes(out, 1, 2)


# ---------------------------------------------------------------- auto: the faster path, measured

PATHS = ("fused", "xla")
ROUNDS = 3  # timings per path, alternating; the fastest of each counts (others load the CPU)
CONTENDED = 0.25  # others' share of the CPUs above which a decision is measured again later
Timer = Callable[[str, tuple[int, ...]], float]  # (path, [B, T, H, D]) -> s per forward+backward


@dataclass(frozen=True)
class Choice:
    """The attention path ``auto`` takes for one shape, with the timings that decided it."""

    path: str
    seconds: dict[str, float]
    shape: tuple[int, ...]
    file: Path
    measured_now: bool
    others_busy: float | None = None  # share of the CPUs other processes used while it was timed

    @property
    def contended(self) -> bool:
        return self.others_busy is not None and self.others_busy > CONTENDED

    def __str__(self) -> str:
        other = "xla" if self.path == "fused" else "fused"
        names = {"fused": "the fused kernel", "xla": "XLA's attention"}
        when = "measured now" if self.measured_now else "measured earlier"
        if self.others_busy is not None:
            when += f" while other processes used {100 * self.others_busy:.0f} % of the CPUs"
            when += " (measured again by the next run)" if self.contended else ""
        return (
            f"ropebook attention for {list(self.shape)} float32: {names[self.path]} "
            f"({1e3 * self.seconds[self.path]:.2f} ms per forward+backward against "
            f"{1e3 * self.seconds[other]:.2f} ms for {names[other]}; {when}, kept in {self.file})"
        )


_choices: dict[Path, Choice] = {}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def choice_file(shape: tuple[int, ...]) -> Path:
    """Where the decision for ``shape`` lives: beside the kernel, keyed by everything that can
    change which path is faster (CPU model and instruction sets, shape, device count, JAX and
    jaxlib versions, and the kernel build, whose name hashes its source, flags and compiler)."""
    import jaxlib

    fields = [_cpu_model(), _cpu_signature(), repr(list(shape)), str(len(jax.devices())),
              jax.__version__, jaxlib.__version__, library_path().name]  # fmt: skip
    key = hashlib.sha256("\n".join(fields).encode()).hexdigest()[:16]
    return library_path().parent / f"attention-choice-{key}.json"


def _read_choice(file: Path, shape: tuple[int, ...]) -> Choice | None:
    """The decision stored in ``file``; ``None`` if absent, or if damaged (with a warning naming
    the file, which is then measured again and overwritten)."""
    if not file.exists():
        return None
    try:
        data = json.loads(file.read_text())
        seconds = {path: float(data["seconds"][path]) for path in PATHS}
        if data["path"] not in PATHS or tuple(data["shape"]) != shape:
            raise ValueError(f"path {data['path']!r}, shape {data['shape']!r}")
        others = data.get("others_busy")
        others = None if others is None else float(others)
        return Choice(data["path"], seconds, shape, file, measured_now=False, others_busy=others)
    except (OSError, ValueError, KeyError, TypeError) as error:
        warnings.warn(
            f"{file}: damaged attention decision ({error}); measuring again", stacklevel=2
        )
        return None


def choose(shape: tuple[int, ...], *, timer: Timer | None = None) -> Choice:
    """The faster attention path for ``[B, T, H, D]`` float32 inputs on this machine.

    Measured once per CPU model, instruction sets, shape, device count, versions and kernel build
    (:func:`choice_file`): ``timer`` (default :func:`time_attention`) times a forward+backward of
    each path, :data:`ROUNDS` times alternating, and the faster minimum wins. The decision is
    written to a JSON file beside the compiled kernel (atomically) and reused from then on,
    without timing; it is printed once per process, with both timings. A decision timed while
    other processes used more than :data:`CONTENDED` of the CPUs is timed again by the next
    process, and replaced if that timing was less contended.
    """
    shape = tuple(int(n) for n in shape)
    file = choice_file(shape)
    if file in _choices:
        return _choices[file]
    choice = _read_choice(file, shape)
    if choice is None or choice.contended:
        measured = _measure(shape, file, timer or time_attention)
        if choice is None or (measured.others_busy or 0.0) <= (choice.others_busy or 0.0):
            choice = measured
            record = {"path": choice.path, "seconds": choice.seconds, "shape": list(shape),
                      "others_busy": choice.others_busy, "cpu": _cpu_model(),
                      "jax": jax.__version__, "kernel": library_path().name}  # fmt: skip
            file.parent.mkdir(parents=True, exist_ok=True)
            io.write_json_atomic(file, record)
    print(choice, file=sys.stderr, flush=True)
    _choices[file] = choice
    return choice


def _measure(shape: tuple[int, ...], file: Path, timer: Timer) -> Choice:
    """Time both paths :data:`ROUNDS` times alternating; the faster minimum wins (a tie keeps
    the kernel). Also reads how busy other processes kept the CPUs meanwhile."""
    seconds = {path: math.inf for path in PATHS}
    before = cpu_seconds()
    for _ in range(ROUNDS):
        for path in PATHS:
            seconds[path] = min(seconds[path], float(timer(path, shape)))
    after = cpu_seconds()
    others = None
    if before is not None and after is not None and after[0] > before[0]:
        wall, machine, own = (a - b for a, b in zip(after, before, strict=True))
        others = min(1.0, max(0.0, (machine - own) / (wall * (os.cpu_count() or 1))))
    path = min(PATHS, key=seconds.__getitem__)
    return Choice(path, seconds, shape, file, measured_now=True, others_busy=others)


def cpu_seconds() -> tuple[float, float, float] | None:
    """Seconds of wall clock, of CPU time the whole machine spent busy (``/proc/stat``) and of
    this process's CPU time; ``None`` where the machine's are unreadable (not Linux)."""
    try:
        fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + fields[4]  # idle and waiting for I/O
    busy = (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")
    return time.perf_counter(), busy, time.process_time()


def time_attention(path: str, shape: tuple[int, ...], repeats: int = 3) -> float:
    """Seconds per forward+backward of ``path`` ("fused" or "xla") on random ``shape`` inputs,
    the batch sharded over the CPU devices as :mod:`ropebook.train` shards it (fastest of
    ``repeats`` after a warm-up). Runs in its own thread, so it may be called while a model is
    being traced (``applies`` is), with JAX's trace state of that thread untouched."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(_time_attention, path, shape, repeats).result()


def _time_attention(path: str, shape: tuple[int, ...], repeats: int) -> float:
    attend = causal_attention if path == "fused" else xla_attention
    devices = jax.devices()
    count = max(n for n in range(1, len(devices) + 1) if shape[0] % n == 0)
    mesh = jax.sharding.Mesh(devices[:count], ("data",))
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    keys = jax.random.split(jax.random.key(0), 4)
    q, k, v, d_out = (jax.device_put(jax.random.normal(key, shape), sharding) for key in keys)
    step = jax.jit(lambda q, k, v, d_out: jax.vjp(attend, q, k, v)[1](d_out))
    jax.block_until_ready(step(q, k, v, d_out))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(step(q, k, v, d_out))
        best = min(best, time.perf_counter() - start)
    return best


# ---------------------------------------------------------------- JAX wiring


def _forward_call(q, k, v, *, window: int, chunk: int):
    *batch, t, h, _ = q.shape
    lse = jax.ShapeDtypeStruct((*batch, h, t), q.dtype)
    out = (jax.ShapeDtypeStruct(q.shape, q.dtype), lse)
    return jax.ffi.ffi_call(_FORWARD, out)(q, k, v, window=np.int64(window), chunk=np.int64(chunk))


def _backward_call(q, k, v, out, lse, d_out, *, window: int, chunk: int):
    grad = jax.ShapeDtypeStruct(q.shape, q.dtype)
    return jax.ffi.ffi_call(_BACKWARD, (grad, grad, grad))(
        q, k, v, out, lse, d_out, window=np.int64(window), chunk=np.int64(chunk)
    )


def _per_device(impl, rule: str):
    """``impl`` run on each device's share of the leading (batch) dims; the rest unsharded. Its
    last operand is a :func:`_tag` (replicated, never vmapped)."""
    sharded = custom_partitioning(impl)

    def shardings(mesh, shapes):
        spec = tuple(shapes[0].sharding.spec)
        leading = (spec + (None,) * len(shapes[0].shape))[: len(shapes[0].shape) - 3]
        return [NamedSharding(mesh, PartitionSpec(*leading, *(None,) * (len(s.shape) - len(leading))))
                for s in shapes]  # fmt: skip

    def infer(mesh, arg_shapes, result_shapes):
        return tuple(shardings(mesh, [arg_shapes[0], *result_shapes])[1:])

    def partition(mesh, arg_shapes, result_shapes):
        args = [*shardings(mesh, arg_shapes[:-1]), NamedSharding(mesh, PartitionSpec())]
        results = shardings(mesh, [arg_shapes[0], *result_shapes])[1:]
        return mesh, impl, tuple(results), tuple(args)

    sharded.def_partition(
        infer_sharding_from_operands=infer, partition=partition, sharding_rule=rule
    )

    @jax.custom_batching.custom_vmap
    def call(*args):
        return sharded(*args)

    @call.def_vmap
    def _(axis_size, batched, *args):  # the mapped axis comes first: one more batch dim
        *arrays, tag = args
        arrays = [
            arg if is_batched else jnp.broadcast_to(arg, (axis_size, *arg.shape))
            for arg, is_batched in zip(arrays, batched[:-1], strict=True)
        ]
        outs = sharded(*arrays, tag)
        return outs, tuple(True for _ in outs)

    return call


# The tag's factors (w, c) appear in no result: the tag is replicated, as `partition` says.
_FORWARD_RULE = "... t h d, ... t h d, ... t h d, z w c -> ... t h d, ... h t"
_BACKWARD_RULE = "... t h d, ... t h d, ... t h d, ... t h d, ... h t, ... t h d, z w c -> ... t h d, ... t h d, ... t h d"


def _tag(window: int, chunk: int) -> jnp.ndarray:
    """An empty ``[0, window + 1, chunk + 1]`` operand: the custom partitioning call in the
    program then shows its window and chunk in its shape. The call's kernel is a Python callback
    that the program names by an object id, different in every process; JAX's persistent
    compilation cache can leave that id out of its key
    (:func:`ropebook.runtime.enable_compilation_cache`) only if nothing else about the call is
    hidden, and window and chunk otherwise would be (two programs differing in them alone would
    share a key)."""
    return jnp.zeros((0, window + 1, chunk + 1), jnp.float32)


@functools.cache
def _kernels(window: int, chunk: int):
    """The partitioned, vmappable forward and backward calls for one window and chunk (0: none),
    which the kernel takes as attributes: fixed when a model is traced, as its shapes are. Each
    takes :func:`_tag` as its last operand."""

    # positional only: custom_partitioning binds its arguments by position
    def forward(q, k, v, tag):
        return _forward_call(q, k, v, window=window, chunk=chunk)

    def backward(q, k, v, out, lse, d_out, tag):
        return _backward_call(q, k, v, out, lse, d_out, window=window, chunk=chunk)

    return _per_device(forward, _FORWARD_RULE), _per_device(backward, _BACKWARD_RULE)


def causal_attention(
    q: jnp.ndarray,
    k: jnp.ndarray,
    v: jnp.ndarray,
    *,
    window: int | None = None,
    chunk: int | None = None,
) -> jnp.ndarray:
    """``softmax(q kᵀ/√D + mask) v`` for ``[B, T, H, D]`` float32 inputs, fused on CPU; the mask is
    causal, and local where ``window`` or ``chunk`` is set (:func:`first_keys`), in which case the
    kernel skips the tiles of keys no query of a block sees, forward and backward."""
    check_local(window, chunk)
    return _fused(int(window or 0), int(chunk or 0), q, k, v)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _fused(window: int, chunk: int, q, k, v):
    _require()
    return _kernels(window, chunk)[0](q, k, v, _tag(window, chunk))[0]


def _fused_fwd(window, chunk, q, k, v):
    _require()
    out, lse = _kernels(window, chunk)[0](q, k, v, _tag(window, chunk))
    return out, (q, k, v, out, lse)


def _fused_bwd(window, chunk, saved, d_out):
    _require()
    return tuple(_kernels(window, chunk)[1](*saved, d_out, _tag(window, chunk)))


_fused.defvjp(_fused_fwd, _fused_bwd)
