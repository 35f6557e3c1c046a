"""A share of successes with its interval: how many seeds of an arm learnt its task.

With a handful of seeds a share is 0, 1 or close to them, where the textbook ``p ± z·√(p(1−p)/n)``
collapses to a point (3 of 3 would read [1, 1]). :func:`share_interval` is Wilson's score
interval (Wilson 1927; the ``"wilson"`` method of scipy's ``binomtest(...).proportion_ci``,
without its continuity correction): the shares ``p`` whose two-sided score test at ``confidence``
does not reject ``k`` successes of ``n``, which stays inside [0, 1] and is never empty.
"""

from __future__ import annotations

import math

from scipy import stats


def share_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(k / n, low, high)``: the share of ``successes`` in ``n`` trials and its Wilson score
    interval at ``confidence``."""
    if n < 1:
        raise ValueError(f"a share needs at least one trial, got n={n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n={n}], got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    share = successes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    # at k = 0 or k = n one end is exactly 0 or 1; rounding must not move it off
    low = 0.0 if successes == 0 else max(centre - half, 0.0)
    high = 1.0 if successes == n else min(centre + half, 1.0)
    return share, low, high
