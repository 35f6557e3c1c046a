"""Both attention paths: the fused C++ kernel against the spelled-out attention, sharded, vmapped
and built; the measured choice between it and XLA's."""

import functools
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ropebook
from ropebook import attention, model


def reference(q, k, v):
    return model._attend_explicit(q, k, v, None)[0]


def _inputs(shape, scale=1.0, seed=0):
    keys = jax.random.split(jax.random.key(seed), 4)
    return [scale * jax.random.normal(key, shape, jnp.float32) for key in keys]


def _assert_close(got, want, rtol=2e-5, floor=0.0):
    """Equal to ``rtol`` of the largest entry (or of ``floor``, where the reference is exactly 0:
    a window of one token has no gradient for its query and key, the kernel rounds to ~1e-6)."""
    scale = max(float(jnp.abs(want).max()), floor)
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale)


# T not a multiple of the 16-float vector or of the 4-row block; D = 16, 32; large scores
@pytest.mark.parametrize(
    "shape, scale",
    [((2, 37, 3, 16), 1.0), ((1, 128, 2, 32), 1.0), ((3, 5, 1, 16), 1.0), ((2, 64, 2, 16), 12.0)],
)
def test_forward_and_gradients_equal_spelled_out_attention(shape, scale, monkeypatch):
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    assert attention.applies(jnp.zeros(shape), None)
    q, k, v, d_out = _inputs(shape, scale)
    out, pullback = jax.vjp(attention.causal_attention, q, k, v)
    want, want_pullback = jax.vjp(reference, q, k, v)
    assert jnp.isfinite(out).all()
    _assert_close(out, want)
    for got, expected in zip(pullback(d_out), want_pullback(d_out), strict=True):
        _assert_close(got, expected)


def test_first_position_attends_only_to_itself():
    q, k, v, _ = _inputs((1, 9, 2, 16))
    out = attention.causal_attention(q, k, v)
    np.testing.assert_allclose(out[:, 0], v[:, 0], rtol=1e-6)
    # the future does not leak: changing the last key and value leaves earlier outputs alone
    later = attention.causal_attention(q, k.at[:, -1].add(5.0), v.at[:, -1].add(5.0))
    np.testing.assert_array_equal(out[:, :-1], later[:, :-1])


def test_vmap_folds_the_mapped_axis_into_the_batch():
    q, k, v, _ = _inputs((3, 2, 20, 2, 16))
    loss = lambda q, k, v: jnp.sum(attention.causal_attention(q, k, v) ** 2)  # noqa: E731
    grads = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2))))(q, k, v)
    for i in range(3):
        single = jax.grad(loss, argnums=(0, 1, 2))(q[i], k[i], v[i])
        for got, want in zip(grads, single, strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-6)
    # an unbatched argument is broadcast
    shared = jax.vmap(attention.causal_attention, in_axes=(0, None, None))(q, k[0], v[0])
    _assert_close(shared[1], reference(q[1], k[0], v[0]))


def test_model_uses_it_only_where_it_applies(monkeypatch):
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    x = jnp.zeros((1, 8, 2, 16))
    assert attention.applies(x, None)
    assert not attention.applies(x, jnp.zeros((2, 8, 8)))  # ALiBi, Kerple, FIRE
    assert not attention.applies(jnp.zeros((1, 8, 2, 8)), None)  # head dim 8
    assert not attention.applies(x.astype(jnp.bfloat16), None)
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "xla")
    assert not attention.applies(x, None)
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "flash")
    with pytest.raises(ValueError, match="ROPEBOOK_ATTENTION.*'flash'"):
        attention.applies(x, None)


# ---------------------------------------------------------------- local attention


def local_reference(q, k, v, window=None, chunk=None):
    """Dense attention under a mask built from the definitions, one (query, key) at a time:
    query i sees key j <= i if i - j < window (a sliding window, itself included) and if both
    lie in the same chunk of ``chunk`` tokens."""
    t = q.shape[1]
    seen = np.zeros((t, t), dtype=bool)
    for i in range(t):
        for j in range(i + 1):
            in_window = window is None or i - j < window
            in_chunk = chunk is None or i // chunk == j // chunk
            seen[i, j] = in_window and in_chunk
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    probs = jax.nn.softmax(jnp.where(seen, scores, -jnp.inf), axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", probs, v)


def _local(path, window, chunk):
    attend = attention.causal_attention if path == "fused" else attention.xla_attention
    return lambda q, k, v: attend(q, k, v, window=window, chunk=chunk)


# T a multiple of neither the 8- or 16-float tile nor the 8-row block (37, 45), and one that is
# (64); windows of 1 (itself only), inside one tile, across tiles, and longer than T; chunks
# of 1, smaller than a tile, not dividing it (24), and longer than T; both at once
LOCAL_CASES = [
    ((2, 37, 3, 16), 1, None), ((2, 37, 3, 16), 5, None), ((1, 64, 2, 32), 17, None),
    ((1, 45, 2, 16), 40, None), ((1, 20, 2, 16), 64, None), ((2, 37, 3, 16), None, 1),
    ((2, 37, 3, 16), None, 8), ((1, 64, 2, 16), None, 24), ((1, 45, 1, 32), None, 100),
    ((1, 45, 2, 16), 6, 16),
]  # fmt: skip


@pytest.mark.parametrize("path", ["fused", "xla"])
@pytest.mark.parametrize("shape, window, chunk", LOCAL_CASES)
def test_local_attention_equals_the_dense_masked_reference(path, shape, window, chunk, monkeypatch):
    monkeypatch.setenv("ROPEBOOK_ATTENTION", path)
    q, k, v, d_out = _inputs(shape, scale=2.0, seed=3)
    out, pullback = jax.vjp(_local(path, window, chunk), q, k, v)
    want, want_pullback = jax.vjp(functools.partial(local_reference, window=window, chunk=chunk), q, k, v)  # fmt: skip
    _assert_close(out, want)
    for got, expected in zip(pullback(d_out), want_pullback(d_out), strict=True):
        _assert_close(got, expected, floor=float(jnp.abs(out).max()))


@pytest.mark.parametrize("path", ["fused", "xla"])
def test_a_window_of_one_returns_each_value_and_a_long_one_is_full_causal(path, monkeypatch):
    monkeypatch.setenv("ROPEBOOK_ATTENTION", path)
    q, k, v, _ = _inputs((2, 29, 2, 16))
    np.testing.assert_allclose(_local(path, 1, None)(q, k, v), v, rtol=1e-6)
    np.testing.assert_allclose(_local(path, None, 1)(q, k, v), v, rtol=1e-6)
    full = _local(path, None, None)(q, k, v)
    for window, chunk in ((29, None), (1000, None), (None, 29), (None, 1000), (29, 29)):
        np.testing.assert_array_equal(_local(path, window, chunk)(q, k, v), full)


@pytest.mark.parametrize("window, chunk", [(8, None), (None, 16)])
def test_the_kernel_skips_key_tiles_no_query_of_a_block_sees(window, chunk, monkeypatch):
    """A NaN key and value at position 0: XLA's mask multiplies it by 0 (NaN), so only tiles the
    kernel never reads keep it out. Queries from 32 on (past the window, or in a later chunk,
    by more than a 16-float tile and an 8-row block) and their gradients stay finite, forward
    and backward, and equal the reference's."""
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    q, k, v, d_out = _inputs((1, 64, 2, 16), seed=5)
    poisoned = k.at[:, 0].set(jnp.nan), v.at[:, 0].set(jnp.nan)
    out, pullback = jax.vjp(_local("fused", window, chunk), q, *poisoned)
    want, want_pullback = jax.vjp(functools.partial(local_reference, window=window, chunk=chunk), q, k, v)  # fmt: skip
    assert jnp.isnan(out[:, 0]).all()  # the query that does see it
    _assert_close(out[:, 32:], want[:, 32:])
    for got, expected in zip(pullback(d_out), want_pullback(d_out), strict=True):
        _assert_close(got[:, 32:], expected[:, 32:])


def test_bad_window_or_chunk_is_named():
    q = jnp.zeros((1, 8, 1, 16))
    for window, chunk, name in ((0, None, "window"), (None, -4, "chunk"), (2.5, None, "window"),
                                (True, None, "window")):  # fmt: skip
        with pytest.raises(ValueError, match=f"attention {name} must be a positive integer"):
            attention.attend(q, q, q, window=window, chunk=chunk)


# a sliding-window RoPE layer and a chunked NoPE layer, as in Gemma's and Llama 4's patterns
PATTERN = (model.LayerConfig(window=5), model.LayerConfig(encoding="nope", chunk=8))


@pytest.mark.parametrize("layers", [None, PATTERN])
def test_model_loss_and_gradients_match_xla_attention(layers, monkeypatch):
    config = model.ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=2, head_dim=16,
                               d_ff=64, context=24, encoding="rope", layers=layers)  # fmt: skip
    params = model.init_params(jax.random.key(1), config)
    tokens = jax.random.randint(jax.random.key(2), (3, 25), 0, 64)
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    fused = jax.value_and_grad(model.loss_fn)(params, tokens, config)
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "xla")
    xla = jax.value_and_grad(model.loss_fn)(params, tokens, config)
    np.testing.assert_allclose(fused[0], xla[0], rtol=1e-6)
    for got, want in zip(jax.tree.leaves(fused[1]), jax.tree.leaves(xla[1]), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_sharded_batch_runs_on_each_device_without_gathering():
    """With the batch split over two devices, each runs the kernel on its own half."""
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import ropebook
        from ropebook import attention
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        mesh = Mesh(np.asarray(jax.devices()[:2]), ("data",))
        q, k, v = (jax.random.normal(key, (4, 32, 2, 16)) for key in jax.random.split(jax.random.key(0), 3))
        loss = lambda q, k, v: jnp.sum(attention.causal_attention(q, k, v) ** 3)
        step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
        sharded = jax.device_put((q, k, v), NamedSharding(mesh, PartitionSpec("data")))
        text = step.lower(*sharded).compile().as_text()
        assert "all-gather" not in text and text.count("ropebook_causal_attention") >= 2, text
        (value, grads), (want, want_grads) = step(*sharded), step(q, k, v)
        assert grads[0].sharding.spec == PartitionSpec("data"), grads[0].sharding
        np.testing.assert_allclose(value, want, rtol=1e-6)
        for a, b in zip(grads, want_grads):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        print("ok")
    """)
    env = os.environ | {"ROPEBOOK_CPU_DEVICES": "2", "ROPEBOOK_ATTENTION": "fused"}
    env.pop("XLA_FLAGS", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]


def test_a_sharded_programs_cache_key_shows_window_and_chunk_and_nothing_per_process():
    """The persistent compilation cache keys a program by its text without the custom
    partitioning call's object id (runtime.enable_compilation_cache): the same attention lowered
    again (a new id, as in another process) must give the same text, and another window or chunk
    (which the kernel takes as a hidden attribute) another text; and the second of two processes
    sharing a cache loads the sharded program instead of compiling it."""
    script = textwrap.dedent("""
        import logging, re, sys, jax, jax.numpy as jnp, numpy as np
        import ropebook
        from ropebook import attention, model  # model turns on the persistent cache
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)  # tiny programs too
        hits = []
        class Hits(logging.Handler):
            def emit(self, record):
                hits.append(record.getMessage())
        logging.getLogger("jax._src.compiler").addHandler(Hits())
        logging.getLogger("jax._src.compiler").setLevel(logging.DEBUG)
        mesh = Mesh(np.asarray(jax.devices()[:2]), ("data",))
        one = jax.device_put(jnp.ones((4, 32, 2, 16)), NamedSharding(mesh, PartitionSpec("data")))
        def text(window, chunk):
            loss = lambda q, k, v: jnp.sum(attention.causal_attention(q, k, v, window=window, chunk=chunk))
            found = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(one, one, one).as_text()
            assert "CustomSPMDPartitioning" in found
            return re.sub(r'backend_config = "[0-9]+"', "", found)
        assert text(8, None) == text(8, None)
        assert len({text(8, None), text(16, None), text(None, 8), text(None, None)}) == 4
        q = jax.device_put(jnp.ones((3, 4, 32, 2, 16)), NamedSharding(mesh, PartitionSpec(None, "data")))
        def windowed(q, k, v):
            return attention.causal_attention(q, k, v, window=8)
        np.asarray(jax.jit(jax.vmap(windowed))(q, q, q))
        print("hit" if any("cache hit for 'jit_windowed'" in h for h in hits) else "miss")
    """)
    env = os.environ | {"ROPEBOOK_CPU_DEVICES": "2", "ROPEBOOK_ATTENTION": "fused"}
    env.pop("XLA_FLAGS", None)
    with tempfile.TemporaryDirectory() as cache:
        env["ROPEBOOK_CACHE"] = cache
        (Path(cache) / "kernels").symlink_to(attention.library_path().parent)  # no rebuild
        runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                               text=True) for _ in range(2)]  # fmt: skip
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    assert [run.stdout.split()[-1] for run in runs] == ["miss", "hit"]


def test_kernel_of_the_other_vector_width_agrees_too():
    """Tiles follow the vector width compiled for (8 floats on AVX2, 16 on AVX-512); the width
    this CPU does not pick is built on request and must give the same numbers."""
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import ropebook
        from ropebook import attention, model
        print(attention.lanes())
        for shape, window, chunk in [((2, 37, 3, 16), None, None), ((1, 40, 2, 32), None, None),
                                     ((2, 37, 3, 16), 11, None), ((1, 40, 2, 32), None, 12)]:
            q, k, v, g = (jax.random.normal(key, shape) for key in jax.random.split(jax.random.key(0), 4))
            local = dict(window=window, chunk=chunk)
            out, pull = jax.vjp(lambda *a: attention.causal_attention(*a, **local), q, k, v)
            want, want_pull = jax.vjp(lambda *a: model._attend_explicit(*a, None, **local)[0], q, k, v)
            for a, b in zip([out, *pull(g)], [want, *want_pull(g)]):
                np.testing.assert_allclose(a, b, rtol=0, atol=2e-5 * float(jnp.abs(b).max()))
    """)
    other = "16" if attention.lanes() == 8 else "8"
    env = os.environ | {"ROPEBOOK_ATTENTION": "fused", "ROPEBOOK_KERNEL_LANES": other}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [other]


@pytest.fixture
def quiet_machine(monkeypatch):
    """No other process uses the CPUs while ``auto`` times (whatever else runs beside the tests)."""
    clock = iter(range(1, 10**6))
    monkeypatch.setattr(attention, "cpu_seconds", lambda: (float(next(clock)), 0.0, 0.0))


def busy_machine(monkeypatch, share: float) -> None:
    """Other processes use ``share`` of the CPUs: each reading is a second later, and the
    machine's busy seconds run ahead of this process's by ``share`` x cores a second."""
    clock, cores = iter(range(1, 10**6)), os.cpu_count() or 1
    monkeypatch.setattr(attention, "cpu_seconds", lambda: (t := float(next(clock)), share * cores * t, 0.0))  # fmt: skip


def test_auto_takes_the_faster_path_by_the_fastest_of_its_timings(
    tmp_path, monkeypatch, capsys, quiet_machine
):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(attention, "_choices", {})
    calls = []

    def timer(path, shape):  # XLA steadier, the kernel fastest once: the minimum decides
        calls.append(path)
        return {"fused": [5.0, 0.5, 5.0], "xla": [1.0, 1.0, 1.0]}[path][calls.count(path) - 1]

    choice = attention.choose((4, 32, 2, 16), timer=timer)
    assert choice.path == "fused" and choice.seconds == {"fused": 0.5, "xla": 1.0}
    assert sorted(calls) == ["fused"] * 3 + ["xla"] * 3
    assert "500.00 ms" in capsys.readouterr().err  # says which and why


def test_auto_decision_is_cached_and_forced_modes_ignore_it(
    tmp_path, monkeypatch, capsys, quiet_machine
):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(attention, "_choices", {})
    shape = (2, 16, 2, 16)
    monkeypatch.setattr(attention, "time_attention", lambda path, shape: {"fused": 2.0, "xla": 1.0}[path])  # fmt: skip
    assert not attention.applies(jnp.zeros(shape), None)  # XLA measured faster
    record = json.loads(attention.choice_file(shape).read_text())
    assert record["path"] == "xla" and record["seconds"] == {"fused": 2.0, "xla": 1.0}
    err = capsys.readouterr().err
    assert "XLA's attention (1000.00 ms" in err and "2000.00 ms" in err and "measured now" in err
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    assert attention.applies(jnp.zeros(shape), None)

    def no_timing(path, shape):
        raise AssertionError("timed again")

    monkeypatch.setattr(attention, "_choices", {})  # a new process reads the file
    choice = attention.choose(shape, timer=no_timing)
    assert choice.path == "xla" and not choice.measured_now
    assert "measured earlier" in capsys.readouterr().err
    monkeypatch.setenv("ROPEBOOK_KERNEL_LANES", "16" if attention.lanes() == 8 else "8")
    assert attention.choice_file(shape) != choice.file  # another kernel build: measured anew


def test_a_decision_timed_on_a_busy_machine_is_timed_again_until_a_quieter_one(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    shape = (2, 16, 2, 16)
    calls = []

    def timer(faster):
        def time(path, shape):
            calls.append(path)
            return 1.0 if path == faster else 2.0

        return time

    def run(share, faster):  # a new process each time: the file is all it remembers
        monkeypatch.setattr(attention, "_choices", {})
        busy_machine(monkeypatch, share)
        calls.clear()
        return attention.choose(shape, timer=timer(faster))

    busy = run(0.9, "xla")  # timed while others kept 90 % of the CPUs busy
    assert busy.path == "xla" and busy.contended
    assert busy.others_busy == pytest.approx(0.9, abs=0.01)
    assert "used 90 % of the CPUs (measured again by the next run)" in capsys.readouterr().err
    busier = run(1.0, "fused")  # timed again; busier still, so the first decision stands
    assert len(calls) == 6 and busier.path == "xla" and not busier.measured_now
    quiet = run(0.05, "fused")  # timed again on a quieter machine: replaced
    assert len(calls) == 6 and quiet.path == "fused" and quiet.measured_now and not quiet.contended
    record = json.loads(attention.choice_file(shape).read_text())
    assert record["path"] == "fused" and record["others_busy"] == pytest.approx(0.05, abs=0.01)
    assert run(0.9, "xla").path == "fused" and calls == []  # quiet enough: never timed again


def test_damaged_decision_is_named_and_measured_again(tmp_path, monkeypatch, quiet_machine):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(attention, "_choices", {})
    shape = (2, 16, 2, 16)
    file = attention.choice_file(shape)
    file.parent.mkdir(parents=True)
    file.write_text('{"path": "fused", "seconds": {"fused": 1.0')  # truncated
    with pytest.warns(UserWarning, match=f"{file.name}.*measuring again"):
        choice = attention.choose(shape, timer=lambda path, shape: {"fused": 3.0, "xla": 1.0}[path])  # fmt: skip
    assert choice.path == "xla" and choice.measured_now
    assert json.loads(file.read_text())["path"] == "xla"


def test_timing_runs_both_paths_while_a_model_is_traced():
    shape = (2, 16, 2, 16)

    @jax.jit
    def traced(x):  # choose() is called from inside a trace; the timing must still run
        seconds = {path: attention.time_attention(path, shape, repeats=1) for path in ("fused", "xla")}  # fmt: skip
        assert all(0 < s < 60 for s in seconds.values()), seconds
        return x + 1

    assert traced(jnp.zeros(())) == 1


def test_build_is_cached_by_source_compiler_and_cpu(tmp_path, monkeypatch):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    path = attention.build()
    assert path.parent == tmp_path / "kernels" and path.exists()
    built = path.stat().st_mtime_ns
    assert attention.build() == path and path.stat().st_mtime_ns == built  # not rebuilt
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, path.with_suffix(".sha256").name]
    )  # no partial files left
    monkeypatch.setattr(attention, "FLAGS", (*attention.FLAGS, "-DSOMETHING"))
    assert attention.library_path() != path
    monkeypatch.setenv("ROPEBOOK_KERNEL_LANES", "12")
    with pytest.raises(ValueError, match="ROPEBOOK_KERNEL_LANES.*'12'"):
        attention.library_path()


def test_damaged_cached_library_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    path = attention.build()
    intact = path.read_bytes()
    path.write_bytes(intact[:1000])  # truncated: loading it would crash the process
    assert attention.build() == path and path.read_bytes() == intact


def test_failed_build_names_the_compiler_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(attention.KernelBuildError, match="no-such-compiler"):
        attention.build()
    monkeypatch.setenv("CXX", "c++")
    monkeypatch.setattr(attention, "FLAGS", (*attention.FLAGS, "--no-such-option"))
    with pytest.raises(attention.KernelBuildError, match="failed"):
        attention.build()
    assert not any((tmp_path / "kernels").iterdir())


def test_one_decision_names_the_path_and_why(tmp_path, monkeypatch, capsys):
    """:func:`attention.decision` decides for :func:`attention.applies` (the model) and for the
    build page's machine record (``python -m ropebook machine``); the first case that applies
    gives the reason."""
    from ropebook import __main__ as cli
    from ropebook import train

    fused, bias = (1, 8, 2, 16), jnp.zeros((2, 8, 8))
    cases = [  # (ROPEBOOK_ATTENTION, shape, dtype, bias, path, reason)
        ("xla", fused, jnp.float32, bias, "xla", "ROPEBOOK_ATTENTION=xla"),
        ("fused", fused, jnp.float32, bias, "xla", "a score bias (ALiBi, Kerple, FIRE) keeps"),
        ("fused", fused, jnp.bfloat16, None, "xla", "the fused kernel is float32, the inputs bf"),
        ("fused", (1, 8, 2, 8), jnp.float32, None, "xla", "head dim not a multiple of 16"),
        ("fused", fused, jnp.float32, None, "fused", "ROPEBOOK_ATTENTION=fused"),
    ]
    for setting, shape, dtype, score_bias, path, reason in cases:
        monkeypatch.setenv("ROPEBOOK_ATTENTION", setting)
        chosen = attention.decision(shape, dtype, bias=score_bias is not None)
        assert (chosen.path, chosen.choice) == (path, None) and chosen.reason.startswith(reason)
        assert attention.applies(jnp.zeros(shape, dtype), score_bias) == (path == "fused")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert attention.decision(fused).reason == "the fused kernel is for XLA's CPU backend"
    monkeypatch.undo()

    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(attention, "_choices", {})
    timings = {"fused": 2.0, "xla": 1.0}
    monkeypatch.setattr(attention, "time_attention", lambda path, shape: timings[path])
    config = model.ModelConfig(vocab_size=64, n_layers=1, n_heads=2, d_model=32, d_ff=64,
                               context=16)  # fmt: skip
    tc = train.TrainConfig(steps=1, batch_size=2, seq_len=16, warmup=0)
    chosen = attention.decision((2, 16, 2, 16))
    assert chosen.path == "xla" and chosen.choice.seconds == timings
    assert chosen.reason == "auto: the faster on [2, 16, 2, 16], measured now"
    assert cli._attention_path(config, tc) == {
        "path": "xla",
        "reason": chosen.reason,
        "seconds": timings,
    }
    assert train.provenance(config, tc)["attention"] == "xla"
    alibi = model.ModelConfig(vocab_size=64, n_layers=1, n_heads=2, d_model=32, d_ff=64,
                              context=16, encoding="alibi")  # fmt: skip
    assert cli._attention_path(alibi, tc)["path"] == "xla"
    assert "score bias" in cli._attention_path(alibi, tc)["reason"]
