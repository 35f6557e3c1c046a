"""Presentation: the charts, tables and sentences a chapter shows, built from measured results.

The book's library has two layers for every analysis idea, one above the other:

- ``ropebook.analysis.<idea>`` **measures**: arrays and dataclasses in, arrays, dataclasses,
  numbers and verdict words out (a verdict decided from an interval is a decision on numbers and
  lives there). No Altair, no matplotlib, no Markdown. A formula, a statistic or a verdict rule
  is found there.
- ``ropebook.present.<idea>`` **shows**: every Altair chart and matplotlib figure (on the shared
  helpers of :mod:`ropebook.plots`), every table built for display and every sentence or
  claim text derived from a result. A figure's look, title or axis is changed here.

Imports point down only: ``present`` may import ``ropebook.analysis``, ``ropebook.plots`` and
``ropebook.claims``; nothing under ``ropebook.analysis`` imports ``present`` or ``plots``, and
only these modules and ``plots`` import Altair (``tests/test_layers.py`` checks both). A chapter
calls the measurement, then hands its result to the presentation:
``show.turns_chart(stretch.turns_rows(settings, methods, s), s)``.

One module per idea, each named after its measurement module:

- :mod:`~ropebook.present.ablation` — p-RoPE's Tables 1 and 2, extrapolation curves, paired
  comparisons (``chapters/p_rope.py``, ``p_rope_headline.py``, ``p_sweep.py``);
- :mod:`~ropebook.present.biases` — the CABLE head grids, bias curves, Toeplitz, reach,
  perplexity and ordering tables, extrapolation charts (``chapters/pe_zoo.py``);
- :mod:`~ropebook.present.decide` — what would decide an undecided claim (seeds that would
  detect a measured difference), and the scorecard's table of claims still open;
- :mod:`~ropebook.present.decay` — Prop. 3.1/3.2 tables and figures, Figs 2, 8, 9, the trained
  models' curves (``chapters/decay.py``);
- :mod:`~ropebook.present.dynamics` — the model description, trend tables and charts of any
  statistic along training (every chapter's "over training" section);
- :mod:`~ropebook.present.explorers` — interactive figures whose sliders recompute the curves in
  the browser (spectrum, p-RoPE cut-off, decay);
- :mod:`~ropebook.present.frequencies` — layer × frequency maps, band shares, the checkpoint
  readings (``chapters/frequency_usage.py``, ``chapters/real_checkpoints.py``);
- :mod:`~ropebook.present.heads` — positional-head scans, scores and constructions
  (``chapters/positional_heads.py``);
- :mod:`~ropebook.present.layouts` — the production layouts and the same layouts at our scale,
  with the ratios they could not keep (``chapters/layouts.py``);
- :mod:`~ropebook.present.probes` — the causal plane-removal probe's table, chart and claim text;
- :mod:`~ropebook.present.recall` — recall-at-a-distance curves and tables (``chapters/recall.py``);
- :mod:`~ropebook.present.regime` — turns per context of every plane, and the RoPE variants'
  spectrum (``chapters/rope_basics.py``);
- :mod:`~ropebook.present.scaling` — which pairs each context-extension method changes,
  perplexity and passkey by length, previous-token heads (``chapters/rope_scaling.py``);
- :mod:`~ropebook.present.seedplan` — the seed plan as a table and a sentence;
- :mod:`~ropebook.present.semantic` — semantic-channel curves, the proof's swaps, apostrophe and
  sink heads (``chapters/semantic_channels.py``);
- :mod:`~ropebook.present.task_study` — the kept task study's plan and readings, as the layouts
  and recall chapters glue them.
"""
