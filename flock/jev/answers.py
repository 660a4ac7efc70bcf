"""What Jev answers: the answer and its confidence band. Below the service (service.py)
and the LLM second opinion (llm.py), which both make answers."""

from __future__ import annotations

from dataclasses import dataclass

BAND_HIGH = "high"
BAND_UNSURE = "unsure"


def band_for(top_probability: float, high_threshold: float) -> str:
    return BAND_HIGH if top_probability >= high_threshold else BAND_UNSURE


@dataclass(frozen=True, slots=True)
class JevAnswer:
    question: str
    choice: str
    probs: dict[str, float]  # every choice of the question, summing to 1
    band: str  # "high" when probs[choice] >= the question's high_threshold, else "unsure"
    impl: str
    version: str
    latency_ms: float
    # "local" when the answer is the local model's; "llm" when an unsure answer was settled
    # by the optional LLM second opinion (llm.py), whose choice then replaces the local one.
    source: str = "local"
    local_choice: str = ""  # the local model's own choice, whatever the source
