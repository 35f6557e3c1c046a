"""Fused causal attention for XLA's CPU backend: a small C++ kernel called through XLA's FFI.

**Why.** With heads of 16 dimensions, attention is many tiny products, and XLA computes each
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
cache shared by different machines holds one library per kind of CPU). The file is written
under a temporary name and renamed, so concurrent processes never load half a library, and its
sha256 is recorded beside it and checked before every load. Its two
handlers are registered as FFI targets; :func:`causal_attention` ties them together with
``jax.custom_vjp``, ``custom_partitioning`` (a batch sharded over devices stays sharded: each
device runs the kernel on its own sequences) and ``custom_vmap`` (vmapped models fold the
vmapped axis into the batch).

**When.** :func:`applies` says whether the model's training path uses it: float32, no additive
score bias (every rotary encoding and NoPE; ALiBi, Kerple and FIRE keep XLA's path), a head
dimension that is a multiple of 16, and the CPU backend. ``ROPEBOOK_ATTENTION`` chooses:
``auto`` (default: fused where it applies and the kernel builds; a failed build warns once and
falls back), ``fused`` (a failed build is an error) or ``xla`` (never fused). Results agree with
XLA's attention to float32 rounding (``tests/test_fused_attention.py``).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

from ropebook import io

MODES = ("auto", "fused", "xla")
SOURCE = Path(__file__).with_name("kernels") / "causal_attention.cc"
FLAGS = ("-O3", "-march=native", "-std=c++17", "-shared", "-fPIC", "-fno-math-errno", "-w")
LANES = 16  # the kernel's vector width in floats; head dims must be a multiple
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


def _cpu_signature() -> str:
    """Instruction sets of this CPU (what ``-march=native`` compiles for)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return platform.machine() + line
    except OSError:
        pass
    return platform.machine() + platform.processor()


def library_path() -> Path:
    """Where the compiled kernel for this source, compiler and CPU lives (built or not)."""
    from ropebook import CACHE_DIR

    try:
        version = subprocess.run(
            [_compiler(), "--version"], capture_output=True, text=True, check=True
        ).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError) as error:
        raise KernelBuildError(f"no C++ compiler {_compiler()!r}: {error}") from error
    key = hashlib.sha256(
        "\n".join([SOURCE.read_text(), *FLAGS, version, _cpu_signature(), jax.__version__]).encode()
    ).hexdigest()[:16]
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
    command = [_compiler(), *FLAGS, "-I", jax.ffi.include_dir(), str(SOURCE), "-o"]
    with io.atomic_path(path) as partial:
        result = subprocess.run([*command, str(partial)], capture_output=True, text=True)
        if result.returncode != 0:
            raise KernelBuildError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
        digest = io.sha256_file(partial)
    io.write_bytes_atomic(checksum, digest.encode())
    return path


@functools.cache
def _registered() -> bool:
    """Build, load and register the kernel once per process; ``False`` if it cannot be (auto)."""
    try:
        if shutil.which(_compiler()) is None:
            raise KernelBuildError(f"no C++ compiler {_compiler()!r} on PATH")
        library = ctypes.CDLL(str(build()))
    except (KernelBuildError, OSError) as error:
        if mode() == "fused":
            raise KernelBuildError(f"ROPEBOOK_ATTENTION=fused, but {error}") from error
        warnings.warn(f"fused attention unavailable, using XLA's: {error}", stacklevel=3)
        return False
    for name, symbol in ((_FORWARD, "RopebookCausalAttentionForward"),
                         (_BACKWARD, "RopebookCausalAttentionBackward")):  # fmt: skip
        jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(getattr(library, symbol)), "cpu")
    return True


def _require() -> None:
    if not _registered():
        raise KernelBuildError("the fused attention kernel is unavailable (see the warning above)")


def applies(q: jnp.ndarray, bias: jnp.ndarray | None) -> bool:
    """Whether :func:`causal_attention` should replace XLA's attention for these inputs."""
    if mode() == "xla" or bias is not None or q.dtype != jnp.float32 or q.shape[-1] % LANES:
        return False
    return jax.default_backend() == "cpu" and _registered()


# ---------------------------------------------------------------- JAX wiring


def _forward_call(q, k, v):
    *batch, t, h, _ = q.shape
    lse = jax.ShapeDtypeStruct((*batch, h, t), q.dtype)
    return jax.ffi.ffi_call(_FORWARD, (jax.ShapeDtypeStruct(q.shape, q.dtype), lse))(q, k, v)


def _backward_call(q, k, v, out, lse, d_out):
    grad = jax.ShapeDtypeStruct(q.shape, q.dtype)
    return jax.ffi.ffi_call(_BACKWARD, (grad, grad, grad))(q, k, v, out, lse, d_out)


def _per_device(impl, rule: str):
    """``impl`` run on each device's share of the leading (batch) dims; the rest unsharded."""
    sharded = custom_partitioning(impl)

    def shardings(mesh, shapes):
        spec = tuple(shapes[0].sharding.spec)
        leading = (spec + (None,) * len(shapes[0].shape))[: len(shapes[0].shape) - 3]
        return [NamedSharding(mesh, PartitionSpec(*leading, *(None,) * (len(s.shape) - len(leading))))
                for s in shapes]  # fmt: skip

    def infer(mesh, arg_shapes, result_shapes):
        return tuple(shardings(mesh, [arg_shapes[0], *result_shapes])[1:])

    def partition(mesh, arg_shapes, result_shapes):
        args = shardings(mesh, arg_shapes)
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
        args = [
            arg if is_batched else jnp.broadcast_to(arg, (axis_size, *arg.shape))
            for arg, is_batched in zip(args, batched, strict=True)
        ]
        outs = sharded(*args)
        return outs, tuple(True for _ in outs)

    return call


_forward = _per_device(_forward_call, "... t h d, ... t h d, ... t h d -> ... t h d, ... h t")
_backward = _per_device(
    _backward_call,
    "... t h d, ... t h d, ... t h d, ... t h d, ... h t, ... t h d -> ... t h d, ... t h d, ... t h d",
)


@jax.custom_vjp
def causal_attention(q: jnp.ndarray, k: jnp.ndarray, v: jnp.ndarray) -> jnp.ndarray:
    """``softmax(q kᵀ/√D + causal mask) v`` for ``[B, T, H, D]`` float32 inputs, fused on CPU."""
    _require()
    return _forward(q, k, v)[0]


def _causal_attention_fwd(q, k, v):
    _require()
    out, lse = _forward(q, k, v)
    return out, (q, k, v, out, lse)


def _causal_attention_bwd(saved, d_out):
    _require()
    return tuple(_backward(*saved, d_out))


causal_attention.defvjp(_causal_attention_fwd, _causal_attention_bwd)
