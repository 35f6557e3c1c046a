"""The per-plane causal map as tables and charts, from :mod:`ropebook.analysis.planes`.
Nothing here runs a model."""

from __future__ import annotations

import altair as alt
import numpy as np

from ropebook.analysis.planes import PlaneMap, PlaneTraining

# Each removal metric zeroed, then mean-ablated (side by side in tables and charts).
LABELS = {
    "unrotated": "Δ loss, plane unrotated (nats)",
    "loss": "Δ loss, plane zeroed (nats)",
    "loss_mean": "Δ loss, plane mean-ablated (nats)",
    "previous": "Δ previous-token attention, zeroed",
    "previous_mean": "Δ previous-token attention, mean-ablated",
    "content": "Δ induction score, zeroed",
    "content_mean": "Δ induction score, mean-ablated",
}
# The same, short, for the per-plane tables (seven of them side by side must fit the page).
TABLE_LABELS = {
    "unrotated": "Δ loss, unrotated",
    "loss": "Δ loss, zeroed",
    "loss_mean": "Δ loss, mean-abl.",
    "previous": "Δ prev.-token, zeroed",
    "previous_mean": "Δ prev.-token, mean-abl.",
    "content": "Δ induction, zeroed",
    "content_mean": "Δ induction, mean-abl.",
}


# The per-plane tables: each reading of the removal in a table of its own, so each fits the page.
READINGS = {
    "mean-ablated": ("loss_mean", "previous_mean", "content_mean"),
    "zeroed": ("unrotated", "loss", "previous", "content"),
}


def plane_rows(
    plane_map: PlaneMap, classes: list[str], digits: int = 3, *, reading: str = "mean-ablated"
) -> list[dict]:
    """One row per plane: turns per context, q/k norm share, each change of ``reading``
    (:data:`READINGS`: the deciding mean-ablation, or zeroing with unrotating) with its interval
    (mean ± half-width: the intervals over seeds are symmetric), and the plane's class under
    that reading (``classes``)."""
    if reading not in READINGS:
        raise ValueError(f"unknown reading {reading!r}; valid readings: {', '.join(READINGS)}")
    est = {m: plane_map.estimates(m, digits) for m in READINGS[reading]}
    rows = []
    for i, plane in enumerate(plane_map.planes):
        row = {
            "plane": int(plane),
            "turns per context": f"{plane_map.turns[i]:.3g}",
            "q/k norm share": f"{plane_map.norm_share[:, i].mean():.3f}",
        }
        for m in READINGS[reading]:
            e = est[m][i]
            row[TABLE_LABELS[m]] = f"{e.mean:+.{digits}f} ± {(e.high - e.low) / 2:.{digits}f}"
        row["class"] = classes[i]
        rows.append(row)
    return rows


def unrotation_rows(plane_map: PlaneMap, digits: int = 4) -> list[dict]:
    """One row per plane of a checkpoint's map (:func:`~ropebook.analysis.planes.checkpoint_plane_map`):
    frequency, q/k norm share and the loss change when it is unrotated, with its interval."""
    rows = []
    for i, e in enumerate(plane_map.estimates("unrotated", digits)):
        rows.append(
            {
                "plane": int(plane_map.planes[i]),
                "g (rad/token)": f"{plane_map.frequencies[i]:.3g}",
                "q/k norm share": f"{plane_map.norm_share[:, i].mean():.3f}",
                "Δ loss unrotated (nats)": f"{e.mean:+.{digits}f} [{e.low:+.{digits}f}, {e.high:+.{digits}f}]",
            }
        )
    return rows


def _points(maps: dict[str, PlaneMap]) -> list[dict]:
    rows = []
    for model, m in maps.items():
        est = {metric: m.estimates(metric) for metric in LABELS}
        for i in range(m.n_planes):
            base = {"model": model, "plane": int(m.planes[i]), "turns": float(m.turns[i])}
            rows.append(base | {"metric": "q/k norm share", "mean": float(m.norm_share[:, i].mean()),
                                "low": float(m.norm_share[:, i].min()),
                                "high": float(m.norm_share[:, i].max())})  # fmt: skip
            for metric, label in LABELS.items():
                e = est[metric][i]
                rows.append(base | {"metric": label, "mean": e.mean, "low": e.low, "high": e.high})
    return rows


def plane_chart(maps: dict[str, PlaneMap], width: int = 300, height: int = 150):
    """Altair, one panel per measure: each plane's mean change with its 95% interval (norm share:
    range over seeds) against its turns per training context (log axis), one colour per model."""
    data = alt.InlineData(values=_points(maps))
    x = alt.X("turns:Q", scale=alt.Scale(type="log"), title="turns per training context (log)")
    colour = alt.Color("model:N", title="model")
    panels = []
    for metric in ("q/k norm share", *LABELS.values()):
        base = alt.Chart(data).transform_filter(alt.datum.metric == metric)
        panels.append(
            alt.layer(
                base.mark_rule().encode(
                    x=x, y=alt.Y("low:Q", title=metric), y2="high:Q", color=colour
                ),  # fmt: skip
                base.mark_point(filled=True).encode(
                    x=x,
                    y="mean:Q",
                    color=colour,
                    tooltip=["model:N", "plane:Q", "turns:Q", "mean:Q", "low:Q", "high:Q"],
                ),  # fmt: skip
            ).properties(width=width, height=height, title=metric)
        )
    return alt.vconcat(
        *[alt.hconcat(*panels[i : i + 2]) for i in range(0, len(panels), 2)]
    ).resolve_scale(color="shared")


def training_heatmaps(training: PlaneTraining, width: int = 360, height: int = 180):
    """Altair, two heatmaps over (tokens seen, plane), stacked so the page column holds them: the
    mean over seeds of the loss change when the plane is removed, and of its q/k norm share."""
    rows = []
    for s, tokens in enumerate(training.tokens):
        for i, plane in enumerate(training.planes):
            rows.append(
                {
                    "tokens": f"{int(tokens):,}",
                    "order": s,
                    "plane": f"{int(plane)} ({training.turns[i]:.2g} turns)",
                    "dloss": float(training.delta_loss[:, s, i].mean()),
                    "share": float(training.norm_share[:, s, i].mean()),
                }
            )
    planes = [
        f"{int(p)} ({t:.2g} turns)" for p, t in zip(training.planes, training.turns, strict=True)
    ]
    base = alt.Chart(alt.InlineData(values=rows)).encode(
        x=alt.X("tokens:O", sort=alt.SortField("order"), title="tokens seen"),
        y=alt.Y("plane:O", sort=planes, title="plane (fastest at top)"),
    )
    return alt.vconcat(
        *[
            base.mark_rect()
            .encode(
                color=alt.Color(f"{field}:Q", title=title),
                tooltip=["tokens:O", "plane:O", alt.Tooltip(f"{field}:Q", title=title)],
            )
            .properties(width=width, height=height, title=f"{title} along training")
            for field, title in (("dloss", "Δ loss (nats)"), ("share", "q/k norm share"))
        ]
    ).resolve_scale(color="independent")


def class_counts(classes: dict[str, list[str]]) -> list[dict]:
    """How many planes of each model fall in each class."""
    kinds = sorted({c for cs in classes.values() for c in cs})
    return [{"model": m} | {k: cs.count(k) for k in kinds} for m, cs in classes.items()]


def describe_estimate(e, unit: str = "nats") -> str:
    return f"{e.mean:+.3f} {unit} ({e.text})" if np.isfinite(e.mean) else "no planes"
