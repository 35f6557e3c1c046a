"""The released sizes of the production models the book reads, as ``python -m ropebook layers``
would read them: each model's config class with one released size's ``config.json`` values
written over the defaults (:data:`RELEASED`; none for a model whose released config the book has
not read, which says so). The layouts chapter's production table and wavelength figure read these
(:mod:`ropebook.present.layouts`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from ropebook import preflight
from ropebook.rope_layers import ConfigReading, read, theta_rule


@dataclass(frozen=True)
class Released:
    """A production model read from its config class, with the fields of one released size's
    ``config.json`` (``source``) written over the class defaults (none: the defaults alone)."""

    model: str
    model_type: str
    source: str
    fields: dict[str, Any] = dataclasses.field(default_factory=dict)

    def config(self):
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        return CONFIG_MAPPING[self.model_type](**json.loads(json.dumps(self.fields)))

    def differences(self) -> list[str]:
        """The released fields whose value differs from the class default, with both."""
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        default = CONFIG_MAPPING[self.model_type]()
        out = []
        for name, value in self.fields.items():
            before = preflight.rope_parameters(default) if name == "rope_parameters" else (
                getattr(default, name, None))  # fmt: skip
            after = preflight.rope_parameters(self.config()) if name == "rope_parameters" else (
                value)  # fmt: skip
            if before != after:
                out.append(f"{name} {_short(after)} (class default {_short(before)})")
        return out

    def reading(self) -> ConfigReading:
        return read(self.config(), self.fields or None, self.source)


def _short(value: Any) -> str:
    if isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return "; ".join(f"{k}: {theta_rule(v)}" for k, v in value.items())
    if isinstance(value, dict):
        return theta_rule(value)
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


# The released sizes' values, from each model's published config.json (named in ``source``);
# the models whose released configs this book has not read keep their class defaults, and say so.
RELEASED: dict[str, Released] = {
    "gemma3": Released(
        "Gemma 3 4B", "gemma3_text", "google/gemma-3-4b-it config.json (text_config)",
        {"num_hidden_layers": 34, "hidden_size": 2560, "num_attention_heads": 8,
         "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024,
         "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                             "full_attention": {"rope_type": "linear", "factor": 8.0,
                                                "rope_theta": 1e6}}},
    ),
    "gemma4": Released("Gemma 4", "gemma4_text", "Gemma4TextConfig defaults"),
    "llama4": Released("Llama 4", "llama4_text", "Llama4TextConfig defaults"),
    "command-a": Released("Command A / R7B", "cohere2", "Cohere2Config defaults"),
    "qwen3": Released(
        "Qwen 3 8B", "qwen3", "Qwen/Qwen3-8B config.json",
        {"num_hidden_layers": 36, "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40_960,
         "max_window_layers": 36, "use_sliding_window": False,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}},
    ),
    "llama3.1": Released(
        "Llama 3.1 8B", "llama", "meta-llama/Llama-3.1-8B config.json",
        {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "max_position_embeddings": 131_072,
         "rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192}},
    ),
    "smollm2": Released(
        "SmolLM2 135M", "llama", "HuggingFaceTB/SmolLM2-135M config.json",
        {"num_hidden_layers": 30, "hidden_size": 576, "num_attention_heads": 9,
         "num_key_value_heads": 3, "max_position_embeddings": 8192,
         "rope_parameters": {"rope_type": "default", "rope_theta": 1e5}},
    ),
}  # fmt: skip
