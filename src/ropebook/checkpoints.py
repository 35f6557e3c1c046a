"""Checkpoints on disk: a run's params and optimiser state, its metadata, and the snapshots it kept.

A checkpoint is a directory holding ``step_XXXXXXX.safetensors`` (params and optimiser state,
tensors named by their pytree path) and ``checkpoint.json`` (what :mod:`ropebook.train` records:
configs, step, history, provenance, and here the name and sha256 of the tensor file). Both are
written atomically, the JSON last, so a crash leaves the previous checkpoint intact. Snapshots
(``snapshot_XXXXXXX.safetensors``, params only) sit beside it and are listed in the history.

This module knows the format, not the recipe: the optimiser whose state a checkpoint holds is
passed in (``ropebook.train`` resumes with its own), so it stands below training.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from safetensors.numpy import load_file, save_file

from ropebook import io, model
from ropebook.model import ModelConfig, Params

CHECKPOINT_JSON = "checkpoint.json"
FORMAT = 1
# Beside a model downloaded from a published zoo (ropebook.zoo_archive): which archive, when.
ORIGIN_JSON = "origin.json"


class CheckpointError(io.IntegrityError):
    """A checkpoint is missing, corrupt or belongs to another run; the message names the file."""


def named_leaves(tree: Any, prefix: str) -> list[tuple[str, Any]]:
    """Leaves with names from their pytree path: ``params.layers.0.qkv``, ``opt_state.1.0.mu...``."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [
        (f"{prefix}.{jax.tree_util.keystr(path, simple=True, separator='.')}", leaf)
        for path, leaf in leaves
    ]


def _unflatten(template: Any, prefix: str, tensors: dict[str, np.ndarray], path: Path) -> Any:
    """Fill ``template`` (a tree of shape structs) from ``tensors``, checking names and shapes."""
    leaves = []
    for name, spec in named_leaves(template, prefix):
        if name not in tensors:
            raise CheckpointError(f"{path}: tensor {name!r} is missing")
        array = tensors[name]
        if array.shape != spec.shape or array.dtype != spec.dtype:
            raise CheckpointError(
                f"{path}: tensor {name!r} has shape {array.shape} {array.dtype}, "
                f"expected {spec.shape} {spec.dtype}"
            )
        leaves.append(jnp.asarray(array))
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)


def _params_shape(config: ModelConfig) -> Any:
    return jax.eval_shape(lambda key: model.init_params(key, config), jax.random.key(0))


def save_checkpoint(
    directory: Path | str, step: int, params: Params, opt_state: Any, meta: dict[str, Any]
) -> Path:
    """Write the tensors, then the JSON (``meta`` with the format, step, tensor file and its
    sha256) that points at them, then drop older tensor files; returns the JSON's path."""
    directory = Path(directory)
    name = f"step_{step:07d}.safetensors"
    tensors = {
        name: np.asarray(leaf)
        for prefix, tree in (("params", params), ("opt_state", opt_state))
        for name, leaf in named_leaves(tree, prefix)
    }
    with io.atomic_path(directory / name) as tmp:
        save_file(tensors, str(tmp))
    head = {"format": FORMAT, "file": name, "sha256": io.sha256_file(directory / name)}
    io.write_json_atomic(directory / CHECKPOINT_JSON, head | {"step": step} | meta)
    for old in directory.glob("step_*.safetensors"):
        if old.name != name:
            old.unlink()
    return directory / CHECKPOINT_JSON


def save_snapshot(directory: Path | str, step: int, params: Params) -> dict[str, Any]:
    """Keep ``params`` (only) at ``step`` beside the checkpoint; returns the history entry that
    lists it (``step``, ``file``, ``sha256``)."""
    name = f"snapshot_{step:07d}.safetensors"
    path = Path(directory) / name
    with io.atomic_path(path) as tmp:
        save_file({k: np.asarray(v) for k, v in named_leaves(params, "params")}, str(tmp))
    return {"step": step, "file": name, "sha256": io.sha256_file(path)}


def read_metadata(directory: Path | str) -> dict[str, Any]:
    """The checkpoint's JSON metadata, or a :class:`CheckpointError` naming the file."""
    path = Path(directory) / CHECKPOINT_JSON
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise CheckpointError(f"{path}: no checkpoint here") from error
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from error
    missing = {"format", "file", "sha256", "step", "model", "train"} - set(meta)
    if missing or meta["format"] != FORMAT:
        raise CheckpointError(
            f"{path}: not a format-{FORMAT} checkpoint (missing {sorted(missing)})"
        )
    return meta


def read_origin(directory: Path | str) -> dict[str, Any] | None:
    """Where a downloaded model came from (:data:`ORIGIN_JSON`: its archive and when it was
    published and pulled), or ``None`` for a model trained into this cache."""
    path = Path(directory) / ORIGIN_JSON
    try:
        origin = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(origin, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    return origin


def snapshot_steps(directory: Path | str) -> list[int]:
    """Steps of the snapshots a finished or interrupted run kept (``TrainConfig.snapshots``)."""
    meta = read_metadata(directory)
    return sorted(e["step"] for e in meta.get("history", {}).get("snapshots", []))


def load_snapshot(directory: Path | str, step: int) -> tuple[Params, dict[str, Any]]:
    """``(params, entry)`` of the snapshot at ``step``, after verifying its sha256 and shapes."""
    meta = read_metadata(directory)
    entries = {e["step"]: e for e in meta.get("history", {}).get("snapshots", [])}
    if step not in entries:
        raise CheckpointError(
            f"{Path(directory) / CHECKPOINT_JSON}: no snapshot at step {step}; "
            f"kept: {sorted(entries)}"
        )
    entry = entries[step]
    path = Path(directory) / entry["file"]
    if not path.exists():
        raise CheckpointError(f"{path}: snapshot file named by {CHECKPOINT_JSON} is missing")
    io.verify_sha256(path, entry["sha256"])
    params_shape = _params_shape(ModelConfig.from_dict(meta["model"]))
    return _unflatten(params_shape, "params", load_file(str(path)), path), entry


LOADED: dict[Path, dict[str, Any]] = {}  # metadata of every checkpoint this process loaded


def load_checkpoint(
    directory: Path | str, optimizer: optax.GradientTransformation | None = None
) -> tuple[Params, Any, dict[str, Any]]:
    """``(params, opt_state, metadata)`` after verifying the sha256, names and shapes; the
    optimiser state (``None`` without ``optimizer``) is read as ``optimizer.init`` shapes it.

    The metadata is also kept in :data:`LOADED` by folder, so that a chapter can show the
    provenance of every model it used (:func:`ropebook.pipeline.show_provenance`).
    """
    meta = read_metadata(directory)
    path = Path(directory) / meta["file"]
    if not path.exists():
        raise CheckpointError(f"{path}: tensor file named by {CHECKPOINT_JSON} is missing")
    io.verify_sha256(path, meta["sha256"])
    params_shape = _params_shape(ModelConfig.from_dict(meta["model"]))
    tensors = load_file(str(path))
    params = _unflatten(params_shape, "params", tensors, path)
    opt_state = None
    if optimizer is not None:
        opt_shape = jax.eval_shape(optimizer.init, params_shape)
        opt_state = _unflatten(opt_shape, "opt_state", tensors, path)
    LOADED[Path(directory).resolve()] = meta
    return params, opt_state, meta
