"""Tables for the split of a paired comparison's noise (``ropebook.stats.noise``)."""

from __future__ import annotations

from collections.abc import Mapping

from ropebook.stats.noise import NEGLIGIBLE, NoiseSplit


def dash(value: float | int | None, digits: int = 3) -> str:
    if value is None or value != value:  # None or nan: not measured with one seed
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def noise_rows(
    splits: Mapping[tuple[str, str], NoiseSplit], table_windows: Mapping[str, int], context: int
) -> list[dict]:
    """One row per ``(regime, comparison)``: seeds, paired difference, training noise, evaluation
    noise on the windows measured here and on the validation windows of the zoo's own tables
    (``table_windows[regime]``), and the windows that would make evaluation noise negligible."""
    rows = []
    for (regime, comparison), s in splits.items():
        needed = s.windows_needed()
        rows.append({
            "regime": regime,
            "comparison": comparison,
            "seeds": s.n_seeds,
            "Δ %": dash(s.mean),
            "train s.d. %": dash(s.seed_sd),
            f"eval s.d. %, {s.n_windows} win.": dash(s.eval_sd),
            "eval s.d. %, table": dash(s.eval_sd_at(table_windows[regime])),
            "eval/train var.": dash(s.eval_share),
            f"win. for ≤ {NEGLIGIBLE:.0%}": dash(needed),
            "tokens": dash(None if needed is None else needed * (context + 1)),
        })  # fmt: skip
    return rows
