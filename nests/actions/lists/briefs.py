"""What each flight asks its crow's brain, and what that may cost.

The estimate is the prompt's estimated tokens plus the reply's max_tokens: an upper bound
for a brain that keeps to max_tokens, so a flight started within budget cannot overrun
it. The real count replaces the estimate when the crow lands.
"""

from __future__ import annotations

from typing import Any

from flock.brains import BrainRequest, prompt_tokens
from flock.models import Crow
from flock.queries import persona_of

# Reply caps per brain task. Triage is a short JSON object; answers are a few lines.
MAX_TOKENS = {
    "triage": 250,
    "answer": 500,
    "subtask": 400,
    "merge": 700,
    "synthesise": 700,
    "banter": 60,
}


def brief(crow: Crow, *, task: str, context: dict[str, Any], system: str = "") -> BrainRequest:
    return BrainRequest(
        persona=persona_of(crow),
        task=task,
        messages=[],
        max_tokens=MAX_TOKENS[task],
        context=context,
        system=system,
    )


def estimate(request: BrainRequest) -> int:
    return prompt_tokens(request) + request.max_tokens
