"""No outcome typed by hand: a number in a chapter's prose that reads like a result (a percentage,
points, "k of n", a decimal) is glued from the run, or it is a value quoted from a source or fixed
before the data, listed here with where it comes from.

Outside the check: glue roles, maths, citations, cross-references ("Table 2", "Sec. 6.1"), code
spans, link targets, model names ("Gemma 7B", "Llama 3.1 8B") and the encodings' own parameters
("0.75-RoPE", "p = 0.25", "θ = 10⁴"); confidence and power levels (95 %, 99 %, 80 %) are
conventions. A new number in prose either gets a glue role or an entry below naming its source.
"""

import re

import jupytext
import pytest

from ropebook import REPO_ROOT

CHAPTERS = sorted((REPO_ROOT / "chapters").glob("*.py"))

OUTSIDE = [
    r"\$\$.*?\$\$", r"\$[^$\n]+\$", r"\{glue:?\w*\}`[^`]*`", r"\{cite:\w+\}`[^`]*`",
    r"\{(?:ref|numref|eq|doc|download)\}`[^`]*`", r"```.*?```", r"`[^`]*`", r"\]\([^)]*\)",
    r"\b(?:Figs?|Figures?|Tables?|Secs?|Sections?|Props?|Thms?|Theorems?|Lemmas?|Defs?|"
    r"Definitions?|App|Apps|Appendix|Eqs?)\.?\s*[A-Z]?\d+(?:\.\d+)*"
    r"(?:\s*(?:[-–,]|and)\s*[A-Z]?\d+(?:\.\d+)*)*(?:\([a-z]\))?",
    r"\b(?:Gemma|Llama|Qwen|GPT|Mistral|SmolLM|Phi|OLMo|Falcon|Mixtral|DeepSeek)[ -]?\d[\w.]*"
    r"(?:[ -]\d+(?:\.\d+)?[BMK]\b)?",
    r"\b\d(?:\.\d+)?-RoPE\b", r"\bp\s*=\s*[\d.]+", r"\bθ\s*=\s*[\d.⁰¹²³⁴⁵⁶⁷⁸⁹]+",
    r"(?<![\w.])(?:95|99|80)\s*%",
]  # fmt: skip
RESULT_LIKE = re.compile(
    r"(?<![\w.-])\d[\d,]*(?:\.\d+)?(?:\s*(?:%|per ?cent|points?\b)|\s+of\s+(?:its\s+|the\s+)?\d+\b)"
    r"|(?<![\w.-])\d+\.\d+(?![\w-])"
)

# chapter -> {number as written: where it comes from}. Quoted values name their source; values
# fixed before the data name the rule they set.
QUOTED: dict[str, dict[str, str]] = {
    "decay": {"0.95": "the coverage of a 95 % interval (the binomial count's probability)"},
    "frequency_usage": {
        "2 of its 16": "Barbero et al. 2025, Sec. 4, Fig. 4: Gemma 7B's first-layer heads 5 and 8",
        "0.9": "domain_similarity, the 'very similar' line fixed before the data (a parameter)",
        "81%": "0.9 squared: the variance two maps correlating at 0.9 share, by definition",
    },
    "layouts": {"0.75": "Barbero et al. 2025, Sec. 6.1: the paper's p"},
    "p_sweep": {"0.75": "Barbero et al. 2025, Sec. 6.1: the paper's p"},
    "methods": {
        "1 %": "the book's resolution target, fixed before the data (methods chapter)",
        "10%": "the evaluation-noise criterion, fixed before the data (a tenth of the variance)",
    },
    "p_rope_headline": {"1 %": "the book's resolution target, fixed before the data"},
    "plane_map": {
        "0.02": "attention_threshold, fixed before the data (a parameter)",
        "0.005": "loss_threshold, fixed before the data (a parameter)",
        "0.5 %": "the book's matched-regime target: 0.005 nats of loss, by definition",
        "4 %": "0.02 as a share of 0.5, by definition",
        "0.5": "positional_mass, the attention from which the book calls a head positional",
    },
    "p_rope": {"2.5": "Gemma Team 2024: Gemma 2B's parameter count, about 2.5 billion"},
    "real_checkpoints": {
        "0.1": "a package version (0.1.2), not a number",
        "25 %": "Pythia's config: rotary_pct = 0.25",
    },
    "recall": {"0 %": "needle depth, a task setting", "100 %": "needle depth, a task setting"},
    "rope_scaling": {
        "75%": "0.75-RoPE's rotated share, by definition",
        "100 %": "the scale of the slowdown chart, by definition",
        "10 %": "the passkey's depth, a task setting",
    },
    "scorecard": {"0.05": "the test level of a 95 % interval"},
    "semantic_channels": {
        "0.1": "lift_threshold, fixed before the data (a tenth of Gemma's lift, a parameter)",
        "0.5": "an even split of the two halves, by definition",
    },
    "semantic_theory": {
        "1.1": "the lengths the table probes (half, 1.1 and four times N*), a design",
        "0.01": "Lemma A.2's threshold, fixed before the data",
        "0.05": "the slope's tolerance, fixed before the data",
    },
}
# Outcomes once typed by hand, removed: they must not come back, in a chapter or the README.
REMOVED = ("tens of points", "about 8 %")


def prose(path) -> str:
    text = "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
    for pattern in OUTSIDE:
        text = re.sub(pattern, " ", text, flags=re.S | re.M)
    return text


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_numbers_in_prose_are_glued_or_quoted_with_their_source(path):
    allowed = QUOTED.get(path.stem, {})
    typed = [m.group() for m in RESULT_LIKE.finditer(prose(path))]
    assert not [t for t in typed if t not in allowed], (
        f"{path.name}: numbers typed in prose (glue them, or list them in QUOTED with their "
        f"source): {[t for t in typed if t not in allowed]}"
    )


def test_outcomes_once_typed_by_hand_are_gone():
    for path in [*CHAPTERS, REPO_ROOT / "README.md"]:
        text = path.read_text()
        assert not [r for r in REMOVED if r in text], path.name


def test_the_check_finds_a_typed_result_and_leaves_glue_and_maths():
    text = "0.75-RoPE wins by 3.2 % ({glue:text}`x.gap` here; $p = 0.4$; Table 2; Gemma 7B)."
    cleaned = text
    for pattern in OUTSIDE:
        cleaned = re.sub(pattern, " ", cleaned, flags=re.S | re.M)
    assert [m.group() for m in RESULT_LIKE.finditer(cleaned)] == ["3.2 %"]
