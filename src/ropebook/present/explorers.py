"""Interactive figures: a reader moves sliders and the chart recomputes in the browser.

Each builder returns an Altair chart whose curves are computed by Vega expressions from
parameters bound to range inputs, so the page recomputes them offline with the book's vendored
vega-embed (``ropebook.plots``); nothing is precomputed in Python but the presets' numbers.

- :func:`spectrum_explorer` — how far each RoPE plane turns over a context,
  ``g_k L / 2π`` with ``g_k = θ^(-2k/d)`` (:func:`ropebook.rope.turns_per_context`), for the
  θ, head dimension d and context L on the sliders;
- :func:`cutoff_explorer` — the same planes split by p-RoPE's cut-off: the fastest
  ``⌊p d/2⌋`` keep rotating, the rest are freed (:func:`ropebook.rope.frequencies`);
- :func:`decay_explorer` — the all-ones activation ``mean_k cos(r g_k)`` against distance r
  (:func:`ropebook.analysis.decay.expected_ones_activation` divided by d) beside Su et al.'s
  upper bound ``(2/d) Σ_j |S_j(r)|``, ``S_j(r) = Σ_{k<j} e^{i r g_k}`` (RoFormer, Sec. 3.4.3),
  shown relative to its value at r = 0, and the ``±1/√d`` spread of Gaussian queries and keys.

θ and L move on logarithmic sliders (``log₁₀ θ``, ``log₂ L``). The spectrum and cut-off charts
list :func:`presets` — the paper's models (:data:`ropebook.analysis.regime.REFERENCE_MODELS`) and
the zoo's regimes — beside the chart: clicking one loads its θ, d and L into the sliders.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import altair as alt

from ropebook.analysis.regime import REFERENCE_MODELS, RopeSetting


@dataclass(frozen=True)
class Slider:
    """A parameter bound to a range input: its domain, step and label."""

    field: str
    low: float
    high: float
    step: float
    label: str

    def binding(self) -> alt.BindRange:
        return alt.binding_range(min=self.low, max=self.high, step=self.step, name=self.label)

    def check(self, value: float, what: str) -> None:
        if not self.low <= value <= self.high:
            raise ValueError(f"{what}: {self.field} = {value} is outside [{self.low}, {self.high}]")

    def nearest(self, value: float) -> float:
        """``value`` moved into the slider's domain."""
        return min(max(value, self.low), self.high)


LOG_THETA = Slider("log_theta", 1.0, 7.0, 0.01, "log₁₀ θ (base) ")
HEAD_DIM = Slider("head_dim", 4, 256, 2, "head dimension d ")
LOG2_CONTEXT = Slider("log2_context", 4.0, 17.0, 0.25, "log₂ L (context, tokens) ")
P = Slider("p", 0.0, 1.0, 0.05, "p (share of planes rotated) ")
DISTANCE = Slider("distance", 16, 1024, 16, "largest distance r (tokens) ")
SETTING = "setting"
"""The point selection holding θ, d and L: one slider each, and a click on a preset sets all."""
SETTING_SLIDERS = (LOG_THETA, HEAD_DIM, LOG2_CONTEXT)


def signal(slider: Slider, selection: str = SETTING) -> str:
    """The Vega signal of ``slider``'s input: Vega-Lite names a bound point selection's signals
    ``<selection>_<field>``."""
    return f"{selection}_{slider.field}"


THETA = f"pow(10, {signal(LOG_THETA)})"
D = signal(HEAD_DIM)
CONTEXT = f"pow(2, {signal(LOG2_CONTEXT)})"
TURNS_DOMAIN = (1e-5, 1e5)  # turns over the context, the spectrum charts' log y axis


def presets(profile: str = "cpu") -> dict[str, RopeSetting]:
    """The paper's models at their pre-training context, then the zoo's RoPE model in each regime
    of ``profile`` (``"lesson (ours, cpu)"``, ...)."""
    from ropebook import zoo

    ours = {}
    for regime in zoo.REGIMES:
        config, _ = zoo.configs("rope", profile=profile, regime=regime)
        ours[f"{regime} (ours, {profile})"] = RopeSetting(
            config.head_dim, config.rope_base, config.context, f"ropebook.zoo ({regime})"
        )
    return {**REFERENCE_MODELS, **ours}


def _preset_rows(settings: dict[str, RopeSetting]) -> list[dict]:
    """One row per preset with its slider values; presets with the same spectrum share a
    ``curve`` (Gemma 2B and 7B; the matched and flagship regimes), named after all of them."""
    same: dict[tuple, list[str]] = {}
    for name, s in settings.items():
        same.setdefault((s.head_dim, s.base, s.context), []).append(name)
    rows = []
    for name, s in settings.items():
        row = {
            "preset": name, "curve": " = ".join(same[s.head_dim, s.base, s.context]),
            "theta": s.base, "context": s.context, "source": s.source,
            LOG_THETA.field: math.log10(s.base), HEAD_DIM.field: s.head_dim,
            LOG2_CONTEXT.field: math.log2(s.context),
        }  # fmt: skip
        for slider in SETTING_SLIDERS:
            slider.check(row[slider.field], name)
        rows.append(row)
    return rows


def _setting(settings: dict[str, RopeSetting], initial: str) -> tuple[list[dict], alt.Parameter]:
    """The rows of :func:`_preset_rows`, and θ, d and L on three sliders starting at the preset
    named ``initial``; a click on a preset's mark loads its own."""
    if initial not in settings:
        raise ValueError(f"initial setting {initial!r} is not one of {list(settings)}")
    rows = _preset_rows(settings)
    start = next(r for r in rows if r["preset"] == initial)
    setting = alt.selection_point(
        name=SETTING,
        fields=[s.field for s in reversed(SETTING_SLIDERS)],  # Vega-Lite lists them reversed
        value=[{s.field: start[s.field] for s in SETTING_SLIDERS}],
        bind={s.field: s.binding() for s in SETTING_SLIDERS},
        on="click[event.item && event.item.datum && event.item.datum.preset]",
        clear=False,
    )
    return rows, setting


def plane_transforms(theta: str, head_dim: str, context: str) -> list[dict]:
    """Vega-Lite transforms turning one row into one row per plane ``k`` with its frequency
    ``g = θ^(-2k/d)``, its ``turns = g L / 2π`` over the context and its ``rank`` from fastest
    (0) to slowest (1); ``theta``, ``head_dim``, ``context`` are Vega expressions."""
    return [
        {"calculate": f"floor(({head_dim}) / 2)", "as": "planes"},
        {"calculate": "sequence(0, datum.planes)", "as": "k"},
        {"flatten": ["k"]},
        {"calculate": f"pow({theta}, -2 * datum.k / ({head_dim}))", "as": "g"},
        {"calculate": f"datum.g * ({context}) / (2 * PI)", "as": "turns"},
        {"calculate": "datum.k / max(datum.planes - 1, 1)", "as": "rank"},
    ]


def _with(chart: alt.Chart, transforms: list[dict]) -> alt.Chart:
    return chart.copy(deep=False).properties(transform=transforms)


def _turns_axes() -> dict:
    labels = "datum.value >= 1 ? format(datum.value, ',') : format(datum.value, '.0e')"
    return {
        "x": alt.X(
            "rank:Q", title="plane, fastest (0) to slowest (1)", scale=alt.Scale(nice=False)
        ),
        "y": alt.Y(
            "turns:Q",
            title="turns over the context",
            scale=alt.Scale(type="log", domain=list(TURNS_DOMAIN)),
            axis=alt.Axis(labelExpr=labels, tickCount=10),
        ),
    }


def _readout(data: alt.Chart, transforms: list[dict], lines: list[str], height: int) -> alt.Chart:
    """Text in the chart's empty bottom-left corner (below the line from the fastest plane, top
    left, to the slowest): ``lines`` are expressions over the row that ``transforms`` leave."""
    text = {"calculate": f"[{', '.join(lines)}]", "as": "readout"}
    line_height = 16
    return (
        _with(data, [*transforms, text])
        .mark_text(align="left", baseline="bottom", dx=6, fontSize=12, lineHeight=line_height)
        .encode(
            x=alt.value(0),
            y=alt.value(height - 6 - line_height * (len(lines) - 1)),
            text="readout:N",
        )
    )


def _setting_line() -> str:
    return (
        f"'θ = ' + format({THETA}, ',.4~r') + ',  d = ' + {D} + ',  L = ' + "
        f"format({CONTEXT}, ',.0f') + ' tokens'"
    )


def _menu(rows: list[dict], setting: alt.Parameter, color: alt.Color) -> alt.Chart:
    """The presets, one per line: a click loads a preset's θ, d and L into the sliders."""
    tooltip = [
        alt.Tooltip("preset:N"),
        alt.Tooltip("theta:Q", title="θ", format=","),
        alt.Tooltip(f"{HEAD_DIM.field}:Q", title="d"),
        alt.Tooltip("context:Q", title="L (tokens)", format=","),
        alt.Tooltip("source:N"),
    ]
    base = alt.Chart(alt.InlineData(values=rows), title="presets (click one)").encode(
        y=alt.Y("preset:N", sort=None, axis=None), tooltip=tooltip
    )
    dots = base.mark_point(filled=True, size=80, cursor="pointer").encode(
        x=alt.value(6), color=color
    )
    names = base.mark_text(align="left", dx=14, fontSize=12, cursor="pointer").encode(
        x=alt.value(6), text="preset:N"
    )
    return (
        (dots + names)
        .add_params(setting)
        .properties(width=170, height=alt.Step(22), view=alt.ViewBackground(stroke=None))
    )


def _curve_color(rows: list[dict]) -> alt.Color:
    curves = list(dict.fromkeys(r["curve"] for r in rows))
    return alt.Color("curve:N", scale=alt.Scale(domain=curves, scheme="tableau10"), legend=None)


def _curve_rows(rows: list[dict]) -> list[dict]:
    """The first preset of each curve (the others draw the same line)."""
    return list({r["curve"]: r for r in reversed(rows)}.values())[::-1]


def spectrum_explorer(
    settings: dict[str, RopeSetting], initial: str, *, width: int = 420, height: int = 300
) -> alt.HConcatChart:
    """Turns over the context of every plane for the θ, d and L on the sliders (black), beside
    the curves of ``settings`` (:func:`presets`), which a click loads into the sliders;
    ``initial`` names the setting the sliders start at."""
    rows, setting = _setting(settings, initial)
    color = _curve_color(rows)
    yours = alt.Chart(alt.InlineData(values=[{}]))
    preset_curves = _with(
        alt.Chart(alt.InlineData(values=_curve_rows(rows))),
        plane_transforms("datum.theta", f"datum.{HEAD_DIM.field}", "datum.context"),
    ).mark_line(strokeWidth=1.5, opacity=0.55, clip=True).encode(
        **_turns_axes(), color=color,
        tooltip=["curve:N", alt.Tooltip("k:Q", title="plane k"), alt.Tooltip("turns:Q", format=".3g")],
    )  # fmt: skip
    curve = (
        _with(yours, plane_transforms(THETA, D, CONTEXT))
        .mark_line(
            color="black",
            strokeWidth=2.5,
            clip=True,
            point=alt.OverlayMarkDef(color="black", size=14),
        )
        .encode(
            **_turns_axes(),
            tooltip=[alt.Tooltip("k:Q", title="plane k"), alt.Tooltip("turns:Q", format=".3g")],
        )
        .properties(name="spectrum")
    )
    one_turn = (
        alt.Chart(alt.InlineData(values=[{"turns": 1.0}]))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="turns:Q")
    )
    summary = [
        {"calculate": "datum.turns >= 1 ? 1 : 0", "as": "turning"},
        {"aggregate": [
            {"op": "sum", "field": "turning", "as": "turning"},
            {"op": "count", "as": "planes"},
            {"op": "min", "field": "turns", "as": "slowest"},
        ]},
    ]  # fmt: skip
    readout = _readout(
        yours,
        plane_transforms(THETA, D, CONTEXT) + summary,
        [
            _setting_line(),
            "datum.turning + ' of ' + datum.planes + ' planes turn at least once'",
            "'the slowest turns ' + format(datum.slowest, '.3~g') + ' times'",
        ],
        height,
    )
    chart = (one_turn + preset_curves + curve + readout).properties(
        width=width, height=height, title="How far each RoPE plane turns over the context"
    )
    return alt.hconcat(chart, _menu(rows, setting, color), spacing=24)


def cutoff_explorer(
    settings: dict[str, RopeSetting],
    initial: str,
    *,
    p: float = 0.75,
    width: int = 420,
    height: int = 300,
) -> alt.HConcatChart:
    """p-RoPE's cut-off on the spectrum of the θ, d and L on the sliders: the fastest
    ``⌊p · d/2⌋`` planes keep rotating (black), the rest are freed (orange, drawn at the turns
    they made under RoPE); ``settings`` (:func:`presets`) load with a click."""
    P.check(p, "initial p")
    rows, setting = _setting(settings, initial)
    share = alt.param(name=P.field, value=p, bind=P.binding())
    yours = alt.Chart(alt.InlineData(values=[{}]))
    planes = plane_transforms(THETA, D, CONTEXT) + [
        {"calculate": f"datum.k < floor({P.field} * datum.planes)", "as": "kept"},
        {"calculate": "datum.kept ? 'rotated (kept)' : 'not rotated (freed)'", "as": "plane"},
    ]
    status = alt.Color(
        "plane:N",
        scale=alt.Scale(
            domain=["rotated (kept)", "not rotated (freed)"], range=["black", "#e76f51"]
        ),
        legend=alt.Legend(orient="top-right", title=None),
    )
    line = _with(yours, planes).mark_line(color="#adb5bd", clip=True).encode(**_turns_axes())
    points = (
        _with(yours, planes)
        .mark_point(filled=True, size=22, clip=True)
        .encode(
            **_turns_axes(),
            color=status,
            tooltip=[
                "plane:N",
                alt.Tooltip("k:Q", title="plane k"),
                alt.Tooltip("turns:Q", format=".3g"),
            ],
        )
        .properties(name="cutoff")
    )
    one_turn = (
        alt.Chart(alt.InlineData(values=[{"turns": 1.0}]))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="turns:Q")
    )
    summary = planes + [
        {"calculate": "datum.kept ? datum.turns : null", "as": "kept_turns"},
        {"calculate": "datum.kept ? null : datum.turns", "as": "freed_turns"},
        {"aggregate": [
            {"op": "sum", "field": "kept", "as": "kept"},
            {"op": "count", "as": "planes"},
            {"op": "min", "field": "kept_turns", "as": "slowest_kept"},
            {"op": "max", "field": "freed_turns", "as": "fastest_freed"},
        ]},
    ]  # fmt: skip
    cut = (
        _with(
            yours,
            summary
            + [
                {"filter": "datum.kept > 0 && datum.kept < datum.planes"},
                {"calculate": "(datum.kept - 0.5) / max(datum.planes - 1, 1)", "as": "rank"},
            ],
        )  # fmt: skip
        .mark_rule(color="#e76f51", strokeWidth=1.5)
        .encode(x="rank:Q")
    )
    readout = _readout(
        yours,
        summary,
        [
            _setting_line(),
            f"'p = ' + format({P.field}, '.2f') + ' keeps the fastest ' + datum.kept + ' of ' "
            "+ datum.planes + ' planes rotating'",
            "datum.kept > 0 ? 'the slowest kept plane turns ' + format(datum.slowest_kept, "
            "'.3~g') + ' times' : 'no plane rotates: NoPE'",
            "datum.kept < datum.planes ? 'the freed planes turned at most ' + "
            "format(datum.fastest_freed, '.3~g') + ' times under RoPE' : 'no plane is freed: RoPE'",
        ],
        height,
    )
    chart = (
        (one_turn + line + cut + points + readout)
        .add_params(share)
        .properties(width=width, height=height, title="p-RoPE's cut-off on the spectrum")
    )
    menu = _menu(rows, setting, _curve_color(rows))
    return alt.hconcat(chart, menu, spacing=24).resolve_scale(color="independent")


ONES, BOUND = "all-ones q, k: mean_k cos(r g_k)", "Su et al.'s bound, relative to r = 0"


def decay_transforms(theta: str, head_dim: str, distance: str) -> list[dict]:
    """Vega-Lite transforms from one row to one row per distance ``r = 0 .. distance`` holding
    the all-ones activation of unit vectors, ``ones = mean_k cos(r g_k)``, and Su et al.'s
    bound ``bound = (2/d) Σ_j |S_j(r)|`` with ``S_j(r) = Σ_{k<j} e^{i r g_k}`` (RoFormer,
    Sec. 3.4.3), also as ``bound_relative`` to its value ``(d/2 + 1)/2`` at ``r = 0``."""
    return [
        {"calculate": f"floor(({head_dim}) / 2)", "as": "planes"},
        {"calculate": f"sequence(0, ({distance}) + 1)", "as": "r"},
        {"flatten": ["r"]},
        {"calculate": "sequence(0, datum.planes)", "as": "k"},
        {"flatten": ["k"]},
        {"calculate": f"datum.r * pow({theta}, -2 * datum.k / ({head_dim}))", "as": "angle"},
        {"calculate": "cos(datum.angle)", "as": "cos"},
        {"calculate": "sin(datum.angle)", "as": "sin"},
        {
            "window": [
                {"op": "sum", "field": "cos", "as": "S_cos"},
                {"op": "sum", "field": "sin", "as": "S_sin"},
            ],
            "groupby": ["r"],
            "sort": [{"field": "k"}],
            "frame": [None, 0],
        },
        {"calculate": "sqrt(datum.S_cos * datum.S_cos + datum.S_sin * datum.S_sin)", "as": "S"},
        {
            "aggregate": [
                {"op": "mean", "field": "cos", "as": "ones"},
                {"op": "mean", "field": "S", "as": "bound"},
            ],
            "groupby": ["r", "planes"],
        },
        {"calculate": "datum.bound / ((datum.planes + 1) / 2)", "as": "bound_relative"},
    ]


def decay_explorer(
    head_dim: int, base: float, distance: int, *, width: int = 520, height: int = 280
) -> alt.LayerChart:
    """The all-ones activation against distance (the curve Su et al.'s decay argument rests
    on), their upper bound relative to distance 0, and the ``±1/√d`` band within which the
    activations of unit Gaussian queries and keys scatter, for the d, θ and largest distance on
    the sliders, starting at ``head_dim``, ``base`` and ``distance`` (a chapter's own, any of
    which may lie outside a slider's domain: the slider then starts at its nearest end)."""
    start = {HEAD_DIM: head_dim, LOG_THETA: math.log10(base), DISTANCE: distance}
    params = [
        alt.param(name=slider.field, value=slider.nearest(value), bind=slider.binding())
        for slider, value in start.items()
    ]
    theta, d, r_max = f"pow(10, {LOG_THETA.field})", HEAD_DIM.field, DISTANCE.field
    data = alt.Chart(alt.InlineData(values=[{}]))
    legend = alt.Legend(orient="top-right", title=None, labelLimit=300, symbolStrokeWidth=2)
    curves = (
        _with(
            data,
            decay_transforms(theta, d, r_max)
            + [
                {"fold": ["ones", "bound_relative"], "as": ["series", "value"]},
                {"calculate": f"datum.series === 'ones' ? {ONES!r} : {BOUND!r}", "as": "curve"},
            ],
        )  # fmt: skip
        .mark_line(clip=True, strokeWidth=1.2)
        .encode(
            x=alt.X("r:Q", title="distance r = i − j (tokens)", scale=alt.Scale(nice=False)),
            y=alt.Y(
                "value:Q",
                title="activation (unit vectors) / relative bound",
                scale=alt.Scale(domain=[-0.5, 1.0]),
            ),  # fmt: skip
            color=alt.Color(
                "curve:N",
                scale=alt.Scale(domain=[ONES, BOUND], range=["#264653", "#e76f51"]),
                legend=legend,
            ),
            strokeDash=alt.StrokeDash(
                "curve:N",
                scale=alt.Scale(domain=[ONES, BOUND], range=[[1, 0], [6, 3]]),
                legend=legend,
            ),
            tooltip=["curve:N", "r:Q", alt.Tooltip("value:Q", format=".3f")],
        )
        .properties(name="decay")
    )
    band = (
        _with(
            data,
            [
                {"calculate": f"-1 / sqrt({d})", "as": "low"},
                {"calculate": f"1 / sqrt({d})", "as": "high"},
            ],
        )  # fmt: skip
        .mark_rect(color="#8ecae6", opacity=0.35)
        .encode(y="low:Q", y2="high:Q", tooltip=alt.value("Gaussian q, k: ±1/√d"))
    )
    readout = (
        _with(
            data,
            decay_transforms(theta, d, r_max)
            + [
                {"filter": "datum.ones < 0.5"},
                {"aggregate": [{"op": "min", "field": "r", "as": "half"}]},
                {
                    "calculate": (
                        f"['θ = ' + format({theta}, ',.4~r') + ',  d = ' + {d}, "
                        "'all-ones curve below 1/2 from r = ' + (isValid(datum.half) ? datum.half : '—'), "
                        "'shaded: ±1/√d, the spread of Gaussian q, k']"
                    ),
                    "as": "readout",
                },
            ],
        )  # fmt: skip
        .mark_text(align="right", baseline="bottom", fontSize=12, lineHeight=16)
        .encode(x=alt.value(width - 6), y=alt.value(height - 6 - 2 * 16), text="readout:N")
    )
    return (
        (band + curves + readout)
        .add_params(*params)
        .properties(
            width=width,
            height=height,
            title="RoPE's decay with distance: all-ones vectors and Su et al.'s bound",
        )
    )
