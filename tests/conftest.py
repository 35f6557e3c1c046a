"""Fixtures shared by the zoo's tests."""

import dataclasses

import jax
import numpy as np
import pytest

from ropebook import zoo

# The tests check maths at float32 tolerances. On a GPU, JAX multiplies float32 matrices in
# TF32 by default (about 1e-4 off here); on the CPU this changes nothing.
jax.config.update("jax_default_matmul_precision", "highest")


@pytest.fixture
def tiny_zoo(tmp_path, monkeypatch):
    """A private cache, random tokens instead of the corpora, and a 6-step smoke profile."""
    monkeypatch.setattr(zoo, "CACHE_DIR", tmp_path)

    def tokens(domain: str, split: str, vocab_size: int) -> np.ndarray:
        rng = np.random.default_rng([zoo.DOMAINS.index(domain), len(split)])
        return rng.integers(0, vocab_size, 5_000).astype(np.uint16)

    monkeypatch.setattr(zoo, "_tokens", tokens)
    smoke = dataclasses.replace(zoo.PROFILES["smoke"], steps=6, warmup=1, seeds=(0, 1))
    monkeypatch.setitem(zoo.PROFILES, "smoke", smoke)
    return tmp_path
