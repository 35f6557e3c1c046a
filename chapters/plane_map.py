# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What each RoPE plane does: planes removed a quarter at a time, then one by one
#
# {glue:md}`in_short`

# %% [markdown]
# The earlier chapters read the planes of a trained model off norms: which planes a head *can*
# use. Removing them shows which it *does*. This chapter is the book's one home for plane
# ablations of its language models: it removes RoPE's planes at inference, with no retraining,
# and measures what the model loses. First a quarter at a time — the fastest, the slowest or a
# random quarter of the final flagship models, whose positional heads the previous chapter
# followed through training — and then, since quarters are coarse and the literature disagrees
# plane by plane (always on large pretrained models, with one run and no intervals), every plane
# of our matched and flagship RoPE models on its own, in every head and layer. Each plane is then
# placed by how often it turns over the training context, beside its share of the query and key
# norm, and named *positional*, *semantic* or *unused* by a rule stated before the results. The
# papers' readings are written as predictions for our setting first, then decided with the
# measured intervals. (A later chapter, on recall, removes planes from models trained on
# synthetic tasks and reads their task accuracy: another comparison, made with the same probe
# function.)
#
# The chapter trains nothing: it evaluates cached zoo models on the windows and sequences stated
# below.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
n_windows = 32  # in [2, inf): held-out windows per model (context + 1 tokens each)
n_sequences = 16  # in [2, inf): repeated random sequences per model (induction score)
n_heads = 2  # in [1, inf): strongest previous-token (and induction) heads read per model
fraction = 0.25  # in (0, 0.5]: the quarter probe's share of planes; the papers' bands
loss_threshold = 0.005  # in (0, inf): nats; a smaller loss change counts as none (≈ 0.5 % ppl)
# 0.02 of a row's attention, fixed before the data: 4 % of the 0.5 from which the book calls a
# head positional (frequency_usage's positional_mass), so a smaller change moves a head by less
# than a twenty-fifth of what makes it positional; the seed-to-seed spread is shown for scale
attention_threshold = 0.02  # in (0, 1): a smaller drop in an attention score counts as none
training_windows = 16  # in [2, inf): windows per snapshot for the map along training
window_seed = 0  # in [0, inf): numpy Generator seed for windows and sequences
checkpoint = "profile"  # "profile" (smollm2; none on smoke), "smollm2", "none" or a local HF folder
checkpoint_windows = 8  # in [2, inf): held-out windows of the real checkpoint, each unrotated plane
checkpoint_tokens = 128  # in [2, inf): next tokens scored per window (its own tokenizer)

# %% tags=["hide-input"]
import numpy as np
from IPython.display import display
from myst_nb import glue

from ropebook import capture, claims, data, plots, prompts, real_model, zoo
from ropebook.analysis import dynamics as dy
from ropebook.analysis import planes, probes
from ropebook.present import decide
from ropebook.present import planes as show
from ropebook.present import probes as show_probes

plots.setup()
if profile == "smoke":
    n_windows, n_sequences, training_windows = min(n_windows, 4), min(n_sequences, 4), 2
REGIMES = ("matched", "flagship")
# The profile's own seeds: those the seed plan adds to the headline pair serve that comparison,
# and every seed here costs a pass per plane.
base = {r: zoo.seeds_for("rope", profile=profile, regime=r, planned=False) for r in REGIMES}
models = {r: dy.load_models(["rope"], profile=profile, regime=r, seeds=base[r])["rope"]
          for r in REGIMES}  # fmt: skip
config = models["matched"][0].config
period = (config.context - 1) // 2  # BOS + two copies fill the context
test_tokens = data.load_tokens("shakespeare", "test", vocab_size=config.vocab_size)
rng = np.random.default_rng([window_seed, 28])
windows = data.sample_windows(test_tokens, config.context + 1, n_windows, rng)
select_windows = data.sample_windows(test_tokens, config.context, n_windows, rng)
sequences = dy.repeated_random_tokens(rng, n_sequences, period, config.vocab_size)
select_sequences = dy.repeated_random_tokens(rng, n_sequences, period, config.vocab_size)
thresholds = planes.Thresholds(loss=loss_threshold, attention=attention_threshold)
for name, value in {
    "profile": profile,
    "n_planes": config.head_dim // 2,
    **{f"seeds.{r}": ", ".join(str(m.seed) for m in ms) for r, ms in models.items()},  # listings
    "n_windows": n_windows,
    "window_tokens": config.context + 1,
    "eval_tokens": n_windows * (config.context + 1),
    "n_sequences": n_sequences,
    "period": period,
}.items():
    glue(f"plane_map.{name}", value, display=False)

# %% [markdown]
# This run: profile **{glue:text}`plane_map.profile`**, RoPE with {glue:text}`plane_map.n_planes`
# planes per head; seeds {glue:text}`plane_map.seeds.matched` (matched) and
# {glue:text}`plane_map.seeds.flagship` (flagship): the profile's own, since every seed costs a
# pass per plane (the seeds the seed plan adds to 0.75-RoPE and RoPE serve their comparison, in a
# later chapter). Each model reads
# {glue:text}`plane_map.n_windows` windows × {glue:text}`plane_map.window_tokens` tokens
# ({glue:text}`plane_map.eval_tokens:,d` tokens) and {glue:text}`plane_map.n_sequences`
# sequences of BOS + 2 × {glue:text}`plane_map.period` random tokens, from the Shakespeare test
# split.

# %% [markdown]
# ## The predictions, before the results
#
# Each paper studied large pretrained models; here is what its reading predicts for ours, where
# the slowest plane turns about as often over the context as Gemma 7B's over 8k tokens. The
# *fastest* and *slowest* bands are the `fraction` of planes with the highest and lowest
# frequency. The first claim removes each band at once, from the flagship models (the quarter
# probe); in the others a band's change is the mean over its planes of the change when that one
# plane is removed. Each claim is decided by its 95 % interval (over seeds; over windows of one
# seed when there is one); the plane-by-plane claims on the matched and the flagship models, the
# two combined (held on both: held; on one: partly). A band contrast, of quarters or of single
# planes, must be *material*: its interval beyond
# `attention_threshold` (attention scores) or `loss_threshold` (loss), the thresholds that classify
# single planes below, since with thousands of paired windows a difference far too small to matter
# can still be separated from zero. An interval wholly on the near side of the threshold reads
# *not held*: the difference, if any, is smaller than the claim needs (for the quarters, an
# interval within ± the threshold reads *bounded*, a decided null). Both thresholds are fixed
# before the data: `loss_threshold` = 0.005 nats is 0.5 % of perplexity, the book's
# matched-regime target; `attention_threshold` = 0.02 is 4 % of the 0.5 of a row's attention
# from which the book calls a head positional, so a smaller drop moves a head by less than a
# twenty-fifth of what makes it positional. How much the strongest heads' attention varies from
# seed to seed is printed beside the quarter probe, for scale; it decides nothing.

# %% tags=["hide-input"]
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "plane_map.quarters", "Barbero et al. 2025, Secs 5-6; ours (quarter probe, flagship regime)",
        "High frequencies build positional heads, low frequencies carry content: removing the "
        "fastest planes cuts previous-token attention more than removing the slowest, and "
        "removing the slowest costs more loss than removing random ones",
        claims.given,  # probes.controlled_reading: each part on its deciding reading
    ),
    claims.ClaimSpec(
        "plane_map.barbero", "Barbero et al. 2025, Secs 5-6",
        "Fast planes build positional heads, slow planes carry content: removing a fastest-band "
        "plane lowers previous-token attention more than removing a slowest-band plane, and "
        "removing a slowest-band plane lowers the induction score more than a fastest-band one "
        "(each by more than the attention threshold)",
        claims.given,
    ),
    claims.ClaimSpec(
        "plane_map.hong", "Hong et al. 2024",
        "The higher (slower) dimensions carry long-distance dependencies: removing a "
        "slowest-band plane lowers the induction score (a retrieval across half the context) "
        "more than removing a fastest-band plane, by more than the attention threshold",
        claims.given,
    ),
    claims.ClaimSpec(
        "plane_map.chiang", "Chiang and Yogatama 2025",
        "RoPE leaves the fastest-turning dimensions of little use: removing a fastest-band plane "
        "costs less loss than removing a slowest-band plane, by more than the loss threshold",
        claims.given,
    ),
    claims.ClaimSpec(
        "plane_map.oka", "Oka et al. 2026",
        "The planes slower than the high-norm band can be replaced by NoPE at inference with "
        "little loss: unrotating one of them costs less than the loss threshold",
        claims.given,
    ),
    claims.ClaimSpec(
        "plane_map.khan", "Khan et al. 2026",
        "Rotation is needed in only ~10 % of the dimensions: unrotating a plane costs more than "
        "the loss threshold in at most 10 % of the planes",
        claims.given,
    ),
)  # fmt: skip

# %% [markdown]
# (plane-map-quarters)=
# ## A quarter at a time
#
# `model.Intervention(keep_chunks=...)` zeroes a set of planes of every rotated query and key of
# the final flagship RoPE models, so they drop out of every score. Three probes remove the same
# number of planes (`fraction` of them): the **fastest**, the **slowest**, and a **random** set
# (the control for "any planes"; several draws, averaged, listed in the table). On the held-out
# windows above we measure the change in next-token loss (nats, i.e. log-perplexity, so intervals
# never cross into impossible perplexities) and in the mean previous-token attention of the
# `n_heads` strongest previous-token heads (chosen on other windows, intact model). Every
# difference is paired — same seed, same window, with and without the planes.
#
# The paper's reading (Secs 5-6) predicts that removing the fastest planes breaks the
# previous-token heads while removing the slowest barely touches them, and that the slowest
# planes carry content the model needs, so removing them costs more loss than a random set.
#
# **The control for norm, and its prediction (written before the run).** Zeroing a plane removes
# its content and its norm at once, and the slowest planes carry most of the query and key norm.
# So every probe is run twice (`probes.removal`, the probe function the map below and the recall
# chapter share): *zeroing*, and *mean-ablation*, where the removed planes' unrotated queries and
# keys are replaced by their means over the positions of the head-choosing windows and then
# rotated as before: the planes keep their average vector — its norm and the relative-position
# pattern it makes as it turns — and lose only what varies from token to token. The predictions:
# if the slowest planes' loss under zeroing were an artefact of their norm, the mean-ablated loss
# of the slowest quarter would fall to that of a random quarter (the semantic contrast's interval
# would reach 0) while the zeroed one stays above it. If the previous-token heads are positional
# in Thm. 5.3's sense — built from a content-free vector turning with position — mean-ablating
# the fastest planes keeps them (a drop near 0) while zeroing breaks them; a drop as large as
# zeroing's would say they use the fast planes' content.
#
# Each part is decided on the reading that can remove what it claims (`probes.DECIDING`): the
# content part on mean-ablation, which removes content alone; the positional part on zeroing,
# since mean-ablation keeps a positional pattern by construction. The other reading of each part
# stands beside it, and the verdict line says where they disagree.

# %%
quarters_by = {
    ablation: probes.run_probes(
        models["flagship"],
        windows,
        select_windows,
        fraction=fraction,
        n_heads=n_heads,
        seed=window_seed,
        ablation=ablation,
    )
    for ablation in probes.ABLATIONS
}
quarter_readings = {
    a: probes.probe_reading(r, attention=attention_threshold, loss=loss_threshold)
    for a, r in quarters_by.items()
}
quarters = probes.controlled_reading(quarter_readings)  # each part on the reading that decides it
plots.table([row for r in quarters_by.values() for row in show_probes.probe_table(r)])

# %% [markdown]
# The same as a chart: mean change per probe with its 95% interval (over seeds, or over the
# windows of a single seed), zero dashed. Previous-token heads (by seed):

# %%
print(
    {
        seed: [f"L{la}H{h}" for la, h in hs]
        for seed, hs in zip(quarters_by["zeroed"].seeds, quarters_by["zeroed"].heads, strict=True)
    }
)
show_probes.probe_chart(list(quarters_by.values()))
intact = quarters_by["zeroed"].previous["intact"].mean(axis=1)  # per seed, for scale only
if intact.size > 1:
    print(f"the strongest heads' previous-token attention, intact: s.d. {intact.std(ddof=1):.3f} "
          f"from seed to seed (threshold {attention_threshold:g})")  # fmt: skip

# %% [markdown]
# The reading combines two paired contrasts, each against its material threshold:
# Δ attention(fastest) − Δ attention(slowest) with an interval wholly below −`attention_threshold`,
# and Δ loss(slowest) − Δ loss(random) wholly above `loss_threshold`. A part whose interval lies
# within ± its threshold is *bounded* (no material difference either way), one wholly on the near
# side of the threshold otherwise *not held*, one containing it undecided. Both parts held →
# *held*; one held → *partly*; none held → *not held* if one is not held, *bounded* if both are
# bounded, else *cannot decide*. With one seed the intervals are over
# windows of one trained model, which says what this model does but not what training does, so
# the verdict reads *cannot decide*. Each part on its deciding reading gives
# **{glue:text}`plane_map.quarters_verdict`**; the same rule on one reading alone would give
# {glue:text}`plane_map.quarters_mean_verdict` (all mean-ablation) and
# {glue:text}`plane_map.quarters_zeroed_verdict` (all zeroing).

# %% tags=["remove-input"]
material = {"attention": (quarters.positional, -attention_threshold, ""),
            "loss": (quarters.semantic, loss_threshold, "nats")}  # fmt: skip
quarters_to_decide = (
    show_probes.reading_to_decide(quarters)  # one seed: the seeds a verdict on training needs
    if quarters.n_seeds < 2
    else "; ".join(
        f"{name}: " + decide.interval_to_decide(
            e, t, unit=unit, what=f"its measured distance from the threshold {t:+g}")
        for name, (e, t, unit) in material.items() if e.low <= t <= e.high
    )
)  # fmt: skip
CLAIMS.record(
    "plane_map.quarters",
    quarters.verdict,
    show_probes.readings_measured(quarter_readings)
    + f" (material: attention {attention_threshold:g}, loss {loss_threshold:g} nats)",
    interval=f"attention (zeroed): {quarters.positional.text}; "
    f"loss (mean-ablated): {quarters.semantic.text}",
    seeds=quarters.n_seeds,
    basis=show_probes.reading_basis(quarters),
    to_decide=quarters_to_decide,
)
for ablation, one in quarter_readings.items():  # the rule on one reading alone, for the prose
    glue(f"plane_map.quarters_{ablation}_verdict", one.verdict, display=False)
glue("plane_map.quarters_verdict", quarters.verdict, display=False)

# %% [markdown]
# (plane-map-planes)=
# ## The map, plane by plane
#
# Quarters say what a band does together, not what each of its planes does. For every plane of
# every seed: remove the plane from the rotated queries and keys
# (`model.Intervention(keep_chunks=...)`), or keep it but stop it turning
# (`Intervention(frequencies=...)` with that plane at 0, NoPE in one plane); then measure the
# change in next-token loss, in the previous-token attention of the model's `n_heads` strongest
# previous-token heads and in the induction score of its strongest induction heads (heads chosen
# on other windows and sequences, intact model). All changes are paired with the intact model on
# the same windows.
#
# **The control for norm, and its prediction (written before the run).** A plane is removed in the
# quarter probe's two ways ({ref}`plane-map-quarters`): *zeroed*, and *mean-ablated* — its
# unrotated queries and keys replaced by their means over the positions of the head-choosing
# windows (sequences, for the induction score), then rotated as before. If a slow plane's cost
# under zeroing were an artefact of norm, its mean-ablated loss and induction changes would shrink
# to within the thresholds while the zeroed ones stay beyond them, and the slowest-band contrasts
# (Hong's, Chiang's and Barbero's content part) would hold when zeroed and not when mean-ablated.
# A positional plane in Thm. 5.3's sense works through its average vector turning, so
# mean-ablation should leave its previous-token heads standing where zeroing breaks them.
#
# **Which reading decides.** A content or loss claim is decided on mean-ablation, which removes
# content alone; the positional part of {cite:t}`barbero2025round`'s claim on zeroing, since mean-ablation
# keeps a positional pattern by construction (`probes.DECIDING`). Every plane is classed on
# mean-ablation, with its class under zeroing beside it. Unrotating (Oka's and Khan's claims)
# keeps a plane's queries and keys and needs no control. The tables show both readings side by
# side; each claim's measured text gives the other reading's verdict and says where they differ.

# %%
maps = {
    r: planes.map_planes(
        ms, windows, select_windows, sequences, select_sequences, period, n_heads=n_heads
    )
    for r, ms in models.items()
}
classes = {r: planes.classify(m, thresholds, ablation="mean") for r, m in maps.items()}
zeroed_classes = {r: planes.classify(m, thresholds) for r, m in maps.items()}
display(show.plane_chart(maps))

# %% [markdown]
# Each point is one plane (x: turns over the training context, log scale; the fastest plane on
# the right), with its 95 % interval. Look at which planes lift the loss when removed, whether
# those are the planes whose removal breaks the previous-token heads (positional) or the
# induction heads (content), and whether the norm share (top left) ranks the planes the same way.
# The tables give every plane's numbers and class.
#
# **The rule.** A plane is *positional* if removing it lowers previous-token attention by more
# than `attention_threshold` (its whole interval below minus the threshold), *semantic* if it
# lowers the induction score so, both if both; otherwise *used, neither score* if the loss rises
# by more than `loss_threshold` (whole interval above); *unused* if the loss interval lies within
# ± `loss_threshold` and neither attention interval reaches below minus its threshold; else
# *undecided*. An *unused* plane is a bound on its effect, not a proof of none.

# %% tags=["remove-input"]
for r, m in maps.items():
    glue(f"plane_map.n_seeds.{r}", len(m.seeds), display=False)

# %% [markdown]
# **matched RoPE** ({glue:text}`plane_map.n_seeds.matched` seed(s)): mean-ablated (the deciding
# reading), then zeroed and unrotated, each with the class it gives

# %%
for reading, by_regime in (("mean-ablated", classes), ("zeroed", zeroed_classes)):
    display(plots.table(show.plane_rows(maps["matched"], by_regime["matched"], reading=reading)))

# %% [markdown]
# **flagship RoPE** ({glue:text}`plane_map.n_seeds.flagship` seed(s))

# %%
for reading, by_regime in (("mean-ablated", classes), ("zeroed", zeroed_classes)):
    display(plots.table(show.plane_rows(maps["flagship"], by_regime["flagship"], reading=reading)))

# %% [markdown]
# Planes per class, both models:

# %%
plots.table(
    show.class_counts({f"{r}, mean-ablated": cs for r, cs in classes.items()})
    + show.class_counts({f"{r}, zeroed": cs for r, cs in zeroed_classes.items()})
)

# %% [markdown]
# ## Along training
#
# The flagship models kept their parameters at log-spaced steps. At each, the loss change when
# each plane is removed (mean over seeds, `training_windows` windows) and the plane's q/k norm
# share: does the map form early, as {cite:t}`oka2026bands` report for their frequency band, or late?

# %%
training = planes.map_over_training(models["flagship"], windows[:training_windows])
display(show.training_heatmaps(training))

# %% [markdown]
# ## Unrotating the planes of a trained LLM
#
# The claims of {cite:t}`oka2026bands` and {cite:t}`khan2026fractional` were made on large
# pretrained models, so they are also read on one: SmolLM2-135M (the
# [real-checkpoints chapter](real_checkpoints.ipynb); the table gives its planes' frequencies).
# Each plane in turn stops turning in every layer (its frequency set to 0 in
# the model's rotary module), and the next-token loss is scored on `checkpoint_windows` held-out
# windows of `checkpoint_tokens` + 1 of its own tokens, paired with the intact model. (Removing a
# plane would need a hook inside its attention; unrotating needs none.) Per plane, fastest first:
# its frequency, its share of the query and key norm, and the change in loss with its interval
# over windows:

# %%
real_folder = real_model.resolve(checkpoint, profile)
if real_folder is None:
    real_map = None
    print(f"no real checkpoint on the {profile} profile (checkpoint={checkpoint!r})")
else:
    real = capture.load(real_folder)
    _, texts = prompts.prompt_texts(checkpoint_windows, checkpoint_tokens + 1)
    _, real_ids = prompts.tokenize(
        real_folder, texts, checkpoint_tokens + 1, real.config.vocab_size
    )
    real_map = planes.checkpoint_plane_map(real, np.stack(real_ids), "SmolLM2-135M")
    display(plots.table(show.unrotation_rows(real_map)))

# %% tags=["remove-input"]
CLASS_KEYS = dict(zip(("positional", "semantic", "both", "used", "unused", "undecided"),
                      planes.CLASSES, strict=True))  # fmt: skip


def decide_claim(rule, on_checkpoint: bool = False):
    """Verdict, measured text and what would decide one claim on both regimes and, for the
    unrotation claims, the real checkpoint (a part with nothing to measure is left out)."""
    read = maps | ({"SmolLM2-135M": real_map} if on_checkpoint and real_map else {})
    parts = {r: rule(m) for r, m in read.items()}
    verdict = claims.combine_testable([v for v, _, _ in parts.values()])
    measured = "; ".join(f"{r}: {text}" for r, (_, text, _) in parts.items())
    to_decide = "; ".join(
        f"{r}: {how}" for r, (v, _, how) in parts.items() if v in claims.UNDECIDED
    )
    return verdict, measured, to_decide


def samples(m, metric: str = "loss") -> str:
    """What an interval of ``m`` is over: seeds, or the windows (sequences) of one seed."""
    return "seeds" if len(m.seeds) > 1 else f"{WINDOW_NAMES[metric]} of one seed"


WINDOW_NAMES = {"loss": "windows", "previous": "windows", "content": "induction sequences"}


def contrast(m, metric: str, verdict: str, e, threshold: float, unit: str = "") -> str:
    """What would decide one band contrast (an interval against its material threshold)."""
    if verdict not in claims.UNDECIDED:
        return ""
    return decide.interval_to_decide(
        e, threshold, unit=unit, samples=samples(m, metric),
        what=f"its measured distance from the threshold {threshold:+g}",
    )  # fmt: skip


READINGS = {"mean": "mean-ablated", "zeroed": "zeroed"}


def band(m, metric: str, threshold: float, above: bool, ablation: str, unit: str = ""):
    """One band contrast (slowest − fastest) on one reading: verdict, estimate, measured text and
    what would decide it."""
    v, e = planes.band_verdict(
        m, planes.ablated(metric, ablation), threshold, above=above, fraction=fraction
    )
    text = show.describe_estimate(e, unit)
    return v, e, text, contrast(m, metric, v, e, threshold, "nats" if unit else "")


NAMES = {"previous": "Δ prev. attention", "loss": "Δ loss", "content": "Δ induction"}


def controlled(m, metric: str, threshold: float, above: bool, decides: str):
    """A band contrast decided on ``decides``, the other reading beside it: verdict, text, how."""
    unit = "nats" if metric == "loss" else ""
    beside = next(a for a in READINGS if a != decides)
    v, _, text, how = band(m, metric, threshold, above, decides, unit)
    other, _, other_text, _ = band(m, metric, threshold, above, beside, unit)
    measured = (
        f"{NAMES[metric]} slowest − fastest, {READINGS[decides]} {text} ({v}); "
        f"{READINGS[beside]} {other_text} ({other})"
    )
    if other != v:
        measured += f" — the readings disagree: {READINGS[beside]} alone says {other}"
    return v, measured, how


def barbero(m):
    # positional part on zeroing, content part on mean-ablation (probes.DECIDING)
    parts = [
        controlled(m, "previous", attention_threshold, True, probes.DECIDING["positional"]),
        controlled(m, "content", -attention_threshold, False, probes.DECIDING["semantic"]),
    ]
    return (
        claims.combine([v for v, _, _ in parts]),
        "; ".join(text for _, text, _ in parts),
        "; ".join(how for _, _, how in parts if how),
    )


def hong(m):
    return controlled(m, "content", -attention_threshold, False, "mean")


def chiang(m):
    return controlled(m, "loss", loss_threshold, True, "mean")


def oka(m):
    below = planes.below_band(m)
    peak = int(m.planes[np.argmax(m.norm_share.mean(0))])
    if below.size == 0:
        return (
            "not testable here",
            f"the highest-norm plane ({peak}) is the slowest: none below",
            (
                f"a model with planes slower than its highest-norm plane: here that plane "
                f"({peak}) is the slowest of the {m.n_planes}"
            ),
        )
    e = planes.pooled_change(m, "unrotated", below)
    v = claims.verdict_from_interval(*e.bounds, threshold=loss_threshold, above=False)
    how = decide.interval_to_decide(
        e, loss_threshold, unit="nats", samples=samples(m),
        what=f"its measured distance from the {loss_threshold}-nat threshold",
    )  # fmt: skip
    return (
        v,
        (
            f"band at plane {peak}; mean Δ loss unrotating one of the {below.size} planes below it "
            f"{show.describe_estimate(e)}"
        ),
        how,
    )


def khan(m):
    limit = max(1, int(round(0.1 * m.n_planes)))
    estimates = m.estimates("unrotated")
    bounds = planes.count_bounds(estimates, loss_threshold)
    open_planes = {  # planes whose interval contains the threshold: each must be placed
        f"plane {int(p)}": decide.interval_result(e, loss_threshold)
        for p, e in zip(m.planes, estimates, strict=True)
        if e.low <= loss_threshold < e.high
    }
    how = (
        f"{len(open_planes)} of {m.n_planes} planes' intervals contain the {loss_threshold}-nat "
        "threshold; "
        + decide.hardest_to_decide(
            open_planes,
            unit="nats",
            samples=samples(m),
            what=f"its distance from {loss_threshold} nats",
        )  # fmt: skip
        if open_planes
        else ""
    )
    return (
        planes.count_verdict(bounds, limit),
        (
            f"unrotating costs > {loss_threshold} nats in {bounds[0]} to {bounds[1]} of "
            f"{m.n_planes} planes (limit {limit})"
        ),
        how,
    )


basis = (
    "; ".join(f"{r}: {len(m.seeds)} seed(s)" for r, m in maps.items())
    + f"; {n_windows} windows × {config.context + 1} tokens, {n_sequences} induction sequences "
    f"per model; paired per seed and window"
)
basis += f"; SmolLM2-135M: {checkpoint_windows} windows" if real_map else ""
for cid, rule in (("barbero", barbero), ("hong", hong), ("chiang", chiang), ("oka", oka),
                  ("khan", khan)):  # fmt: skip
    verdict, measured, to_decide = decide_claim(rule, on_checkpoint=cid in ("oka", "khan"))
    CLAIMS.record(
        f"plane_map.{cid}", verdict, measured, seeds=len(maps["matched"].seeds), basis=basis,
        to_decide=to_decide,
    )  # fmt: skip
    glue(f"plane_map.{cid}_verdict_text", verdict, display=False)
for r, cs in classes.items():  # planes per class, every class of planes.CLASSES
    for key, kind in CLASS_KEYS.items():
        glue(f"plane_map.count.{r}.{key}", cs.count(kind), display=False)

# %% [markdown]
# ## What the map says
#
# Planes per class — matched: {glue:text}`plane_map.count.matched.positional` positional,
# {glue:text}`plane_map.count.matched.semantic` semantic, {glue:text}`plane_map.count.matched.both`
# positional and semantic, {glue:text}`plane_map.count.matched.used` used (neither score),
# {glue:text}`plane_map.count.matched.unused` unused, {glue:text}`plane_map.count.matched.undecided`
# undecided; flagship: {glue:text}`plane_map.count.flagship.positional` positional,
# {glue:text}`plane_map.count.flagship.semantic` semantic,
# {glue:text}`plane_map.count.flagship.both` positional and semantic,
# {glue:text}`plane_map.count.flagship.used` used (neither score),
# {glue:text}`plane_map.count.flagship.unused` unused,
# {glue:text}`plane_map.count.flagship.undecided` undecided.
#
# Verdicts: {cite:t}`barbero2025round` **{glue:text}`plane_map.barbero_verdict_text`**; {cite:t}`hong2024token`
# **{glue:text}`plane_map.hong_verdict_text`**; {cite:t}`chiang2025dimension`
# **{glue:text}`plane_map.chiang_verdict_text`**; {cite:t}`oka2026bands`
# **{glue:text}`plane_map.oka_verdict_text`**; {cite:t}`khan2026fractional`
# **{glue:text}`plane_map.khan_verdict_text`**. The table below gives each with what was
# measured; a *cannot decide* is a bound at this run's seeds, not agreement.

# %% tags=["remove-input"]
CLAIMS.glue()
