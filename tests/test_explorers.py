"""The interactive charts: their sliders, their presets, and the numbers Vega computes from them
in the browser (the book's vendored vega, vega-lite and vega-embed in headless Chromium) against
the library's numpy formulas."""

import json
import math
import os

import numpy as np
import pytest

from ropebook import REPO_ROOT, rope, sitecheck, zoo
from ropebook.analysis import decay
from ropebook.analysis.regime import REFERENCE_MODELS, RopeSetting
from ropebook.present import explorers as ex

VENDOR = REPO_ROOT / "assets" / "vendor"
SCRIPTS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


def charts() -> dict:
    settings = ex.presets("cpu")
    return {
        "spectrum": ex.spectrum_explorer(settings, "Gemma 7B"),
        "cutoff": ex.cutoff_explorer(settings, "lesson (ours, cpu)", p=0.75),
        "decay": ex.decay_explorer(128, 10_000.0, 256),
    }


def bindings(spec: dict) -> dict[str, dict]:
    """Every input binding of a Vega-Lite spec, by the field or parameter it sets."""
    found = {}
    for param in spec.get("params", []):
        bind = param.get("bind")
        if not bind:
            continue
        if "input" in bind:
            found[param["name"]] = bind
        else:  # a point selection: one input per field
            found.update(bind)
    return found


@pytest.mark.parametrize(
    ("name", "sliders"),
    [
        ("spectrum", ex.SETTING_SLIDERS),
        ("cutoff", (*ex.SETTING_SLIDERS, ex.P)),
        ("decay", (ex.HEAD_DIM, ex.LOG_THETA, ex.DISTANCE)),
    ],
)
def test_every_parameter_is_a_range_input_over_its_stated_domain(name, sliders):
    found = bindings(charts()[name].to_dict())
    assert set(found) == {s.field for s in sliders}
    for slider in sliders:
        bind = found[slider.field]
        assert bind["input"] == "range", bind
        assert (bind["min"], bind["max"], bind["step"]) == (slider.low, slider.high, slider.step)
    # d moves in steps of 2 from an even start: every head dimension it offers is even
    assert ex.HEAD_DIM.low % 2 == 0 and ex.HEAD_DIM.step == 2


def test_presets_are_the_paper_models_and_every_zoo_regime():
    settings = ex.presets("smoke")
    assert {k: settings[k] for k in REFERENCE_MODELS} == REFERENCE_MODELS
    for regime in zoo.REGIMES:
        config, _ = zoo.configs("rope", profile="smoke", regime=regime)
        s = settings[f"{regime} (ours, smoke)"]
        assert (s.head_dim, s.base, s.context) == (
            config.head_dim,
            config.rope_base,
            config.context,
        )
    assert len(settings) == len(REFERENCE_MODELS) + len(zoo.REGIMES)


@pytest.mark.parametrize("name", ["spectrum", "cutoff"])
def test_the_charts_presets_carry_the_library_numbers(name):
    spec = charts()[name].to_dict()
    # the menu's rows (the curves' rows leave out presets that draw the same line)
    rows = max((v for v in spec["datasets"].values() if v and "preset" in v[0]), key=len)
    settings = ex.presets("cpu")
    assert [r["preset"] for r in rows] == list(settings)
    for row in rows:
        s = settings[row["preset"]]
        assert (row["theta"], row["head_dim"], row["context"]) == (s.base, s.head_dim, s.context)
        assert 10 ** row["log_theta"] == pytest.approx(s.base, rel=1e-12)
        assert 2 ** row["log2_context"] == s.context
    gemma = [r for r in rows if r["preset"] in ("Gemma 2B", "Gemma 7B")]
    assert {r["curve"] for r in gemma} == {"Gemma 7B = Gemma 2B"}  # the same spectrum


def test_bad_settings_are_refused_before_drawing():
    settings = ex.presets("cpu")
    with pytest.raises(ValueError, match="not one of"):
        ex.spectrum_explorer(settings, "Gemma 9B")
    with pytest.raises(ValueError, match="p = 1.5 is outside"):
        ex.cutoff_explorer(settings, "Gemma 7B", p=1.5)
    with pytest.raises(ValueError, match="log2_context = 20.0 is outside"):
        ex.spectrum_explorer({"long": RopeSetting(64, 1e4, 2**20, "test")}, "long")


def test_the_decay_chart_starts_a_chapter_setting_outside_its_sliders_at_their_ends():
    params = {p["name"]: p["value"] for p in ex.decay_explorer(512, 1e4, 8).to_dict()["params"]}
    assert params == {"head_dim": ex.HEAD_DIM.high, "log_theta": 4.0, "distance": ex.DISTANCE.low}


# ------------------------------------------------------------------------------ in Chromium
EMBED = """async ([spec, prefix]) => {
  const result = await vegaEmbed('#chart', spec, {actions: false});
  window.view = result.view;
  const find = (group) => {
    for (const mark of group.marks || []) {
      if (mark.name && mark.name.startsWith(prefix) && mark.from) return mark;
      const inner = find(mark);
      if (inner) return inner;
    }
    return null;
  };
  const from = find(result.vgSpec).from;
  window.dataset = from.data || from.facet.data;  // a line per series is drawn from a facet
}"""
SET_AND_READ = """async (signals) => {
  for (const [name, value] of Object.entries(signals)) view.signal(name, value);
  await view.runAsync();
  return view.data(window.dataset).map((row) => ({...row}));
}"""


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(sitecheck.CHROMIUM):
        pytest.fail("chromium is not installed: `make browser` installs Debian's package")
    if not all((VENDOR / s).exists() for s in SCRIPTS):
        pytest.fail("the vendored vega libraries are missing: `make assets` vendors them")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=sitecheck.CHROMIUM, args=sitecheck.CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


def open_chart(browser, chart, prefix: str):
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_content('<html><body><div id="chart"></div></body></html>')
    for script in SCRIPTS:
        page.add_script_tag(path=str(VENDOR / script))
    page.evaluate(EMBED, [json.loads(chart.to_json()), prefix])
    return page, errors


SETTINGS = [(10_000.0, 256, 8192), (500_000.0, 128, 8192), (200.0, 32, 128), (31.6, 6, 20)]


def setting_signals(theta: float, head_dim: int, context: int) -> dict:
    return {
        ex.signal(ex.LOG_THETA): math.log10(theta),
        ex.signal(ex.HEAD_DIM): head_dim,
        ex.signal(ex.LOG2_CONTEXT): math.log2(context),
    }


def test_spectrum_in_the_browser_is_turns_per_context(browser):
    page, errors = open_chart(browser, charts()["spectrum"], "spectrum")
    for theta, head_dim, context in SETTINGS:
        rows = page.evaluate(SET_AND_READ, setting_signals(theta, head_dim, context))
        rows.sort(key=lambda r: r["k"])
        expected = rope.turns_per_context(head_dim, theta, context)
        np.testing.assert_allclose([r["turns"] for r in rows], expected, rtol=1e-12)
        assert [r["k"] for r in rows] == list(range(head_dim // 2))
        assert rows[0]["rank"] == 0 and rows[-1]["rank"] == 1
    assert errors == []
    page.close()


def test_cutoff_in_the_browser_keeps_the_planes_p_rope_rotates(browser):
    page, errors = open_chart(browser, charts()["cutoff"], "cutoff")
    for theta, head_dim, context in SETTINGS:
        for p in (0.0, 0.25, 0.75, 0.9, 1.0):
            signals = setting_signals(theta, head_dim, context) | {ex.P.field: p}
            rows = sorted(page.evaluate(SET_AND_READ, signals), key=lambda r: r["k"])
            rotating = rope.frequencies(head_dim, theta, variant="p-rope", proportion=p) > 0
            assert [r["kept"] for r in rows] == rotating.tolist(), (head_dim, p)
            np.testing.assert_allclose(
                [r["turns"] for r in rows], rope.turns_per_context(head_dim, theta, context)
            )
    assert errors == []
    page.close()


def su_relative_bound(distances, head_dim: int, base: float) -> np.ndarray:
    """RoFormer's (Su et al., Sec. 3.4.3) ``(2/d) Σ_j |S_j(r)|``, ``S_j = Σ_{k<j} e^{i r g_k}``,
    divided by its value ``(d/2 + 1)/2`` at ``r = 0``."""
    grid = rope.base_frequencies(head_dim, base)
    partial_sums = np.cumsum(np.exp(1j * np.outer(distances, grid)), axis=-1)
    return np.abs(partial_sums).mean(-1) / ((head_dim // 2 + 1) / 2)


@pytest.mark.parametrize(("head_dim", "theta", "distance"), [(16, 1e4, 64), (128, 500.0, 256)])
def test_decay_in_the_browser_is_the_all_ones_curve_and_su_bound(
    browser, head_dim, theta, distance
):
    page, errors = open_chart(browser, charts()["decay"], "decay")
    signals = {
        ex.HEAD_DIM.field: head_dim,
        ex.LOG_THETA.field: math.log10(theta),
        ex.DISTANCE.field: distance,
    }
    rows = page.evaluate(SET_AND_READ, signals)
    r = np.arange(distance + 1)
    for series, expected in (
        ("ones", decay.expected_ones_activation(r, head_dim, theta) / head_dim),
        ("bound_relative", su_relative_bound(r, head_dim, theta)),
    ):
        values = sorted((row["r"], row["value"]) for row in rows if row["series"] == series)
        assert [v[0] for v in values] == r.tolist()
        np.testing.assert_allclose([v[1] for v in values], expected, rtol=1e-9, atol=1e-12)
    assert errors == []
    page.close()


CENTRE_OF = """(preset) => {
  let found = null;
  const visit = (item) => {
    if (item.datum && item.datum.preset === preset && item.mark.marktype === 'text') found = item;
    (item.items || []).forEach(visit);
  };
  visit(view.scenegraph().root);
  let x = (found.bounds.x1 + found.bounds.x2) / 2, y = (found.bounds.y1 + found.bounds.y2) / 2;
  for (let group = found.mark.group; group; group = group.mark && group.mark.group) {
    x += group.x || 0;
    y += group.y || 0;
  }
  const box = document.querySelector('#chart svg, #chart canvas').getBoundingClientRect();
  const [left, top] = view.origin();
  return [box.left + left + x, box.top + top + y];
}"""


def test_a_click_on_a_preset_loads_it_into_the_sliders(browser):
    page, errors = open_chart(browser, charts()["spectrum"], "spectrum")
    llama = REFERENCE_MODELS["Llama 3.1 8B"]
    page.mouse.click(*page.evaluate(CENTRE_OF, "Llama 3.1 8B"))
    rows = sorted(page.evaluate(SET_AND_READ, {}), key=lambda r: r["k"])
    np.testing.assert_allclose(
        [r["turns"] for r in rows],
        rope.turns_per_context(llama.head_dim, llama.base, llama.context),
    )
    inputs = page.evaluate(
        "() => Object.fromEntries(Array.from(document.querySelectorAll('input[type=range]'))"
        ".map((i) => [i.name, parseFloat(i.value)]))"
    )
    assert inputs[ex.signal(ex.HEAD_DIM)] == llama.head_dim
    assert inputs[ex.signal(ex.LOG2_CONTEXT)] == math.log2(llama.context)
    # the input shows the value on its step nearest log10(500000) = 5.69897
    assert inputs[ex.signal(ex.LOG_THETA)] == pytest.approx(math.log10(llama.base), abs=0.005)
    # a click anywhere else loads nothing
    page.mouse.click(60, 60)
    after = sorted(page.evaluate(SET_AND_READ, {}), key=lambda r: r["k"])
    assert [r["turns"] for r in after] == [r["turns"] for r in rows]
    assert errors == []
    page.close()
