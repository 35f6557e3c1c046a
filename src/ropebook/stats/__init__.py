"""Statistics every layer may use: numpy and scipy on numbers, nothing else from the package.

- ``power`` — what a run can resolve: minimum detectable effects and seed counts for paired
  comparisons (noncentral t);
- ``noise`` — a paired comparison's spread split into training noise (seeds) and evaluation noise
  (held-out windows) by a two-way random-effects analysis of variance;
- ``anatomy`` — where a paired comparison's spread over seeds comes from (within-run jitter,
  each arm's seed s.d., their correlation), and so which lever can shrink it;
- ``proportion`` — a share of successes (the seeds of an arm that learnt a task) with its Wilson
  score interval.

They sit on the bottom floor (``tests/test_layers.py``): the seed plan, the measurements in
:mod:`ropebook.analysis` and the sentences in :mod:`ropebook.present` all import them, and they
import nothing of the package outside ``stats``.
"""
