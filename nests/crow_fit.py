"""Which crow fits a piece of work: one ranking for a room's dispatch and a list's crew
(docs/CHATROOM.md "Fit", docs/LISTS.md "Crew").

Best first:

1. the crows whose task types include the work's task type (Jev's `task_type` answer);
2. the higher fit score (Jev's `fit_score` of the text against the crow's profile; in a
   room, weighted by trust and recent results);
3. roster order (hatch order), so a tie always breaks the same way.

The task type comes first because it is what the flock page promises ("a code fix goes
to the coder, research to the researcher"), and because Jev's similarity alone is near
zero for a request in words no persona uses, where roster order would hand everything to
the first worker crow (Hugin, the researcher).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from flock import jev as jev_service
from flock.jev.fit import fit_ready
from flock.models import Crow

log = logging.getLogger("crows.fit")

# Where fit scores are compared as numbers (the Sentry's off-task judgement of a claim, the
# orchestration score of a pick), a crow typed for the work's task type scores this much
# above its similarity alone: a nudge for a tie, too small to outweigh a real difference.
TYPED_FIT_BONUS = 0.02


def profile(crow: Crow) -> str:
    """What Jev's fit score reads of a crow: its epithet, strength and best task types."""
    return f"{crow.epithet}. {crow.strength}. Best at: {', '.join(crow.task_types or [])}."


def jev_fit(text: str, crow: Crow, *, on_failure: float = 0.0) -> float:
    """Jev's fit score of `text` for `crow`; `on_failure` when Jev cannot score it (0 by
    default: a room or a list must still get a crow)."""
    try:
        return float(jev_service.fit_score(text, profile(crow)))
    except Exception:
        log.warning("fit_score failed for %s; scoring %s", crow.name, on_failure, exc_info=True)
        return on_failure


def typed_fit(text: str, crow: Crow, task_type: str, *, on_failure: float = 0.0) -> float:
    """Jev's fit score of `text` for `crow`, plus TYPED_FIT_BONUS when the crow is typed
    for `task_type`; `on_failure` stands for the score when Jev cannot give one (0: the
    crow is no better than any other; the Sentry passes 1: a claim is not judged off-task
    on a score nobody computed)."""
    fit = jev_fit(text, crow, on_failure=on_failure)
    return fit + TYPED_FIT_BONUS if is_typed_for(crow, task_type) else fit


def weighted(fit: float, trust_level: int, recent: float) -> float:
    """A room's fit score (docs/GOVERNANCE.md): the typed fit weighted by the crow's trust
    level for the task type and its recent results (the share of its last flights that
    came back), fit x (1 + 0.25 level) x (0.75 + 0.5 recent). Dispatch ranks by it and
    the orchestration score compares a pick against it."""
    return fit * (1 + 0.25 * trust_level) * (0.75 + 0.5 * recent)


def ready_without_loading() -> bool:
    """Whether Jev's fit and task type answer now without loading a model: a list's crew
    is picked under its rotation's lock (and, on SQLite, the write lock), where a load just
    after a start would hold every writer up for a second or more."""
    try:
        return fit_ready()
    except Exception:
        return False


def task_type_of(text: str) -> str:
    """Jev's task type for a piece of work that has none of its own (a split's part); ""
    when Jev cannot answer."""
    try:
        return str(jev_service.ask("task_type", text).choice)
    except Exception:
        log.warning("Jev could not type %r", text[:80], exc_info=True)
        return ""


def is_typed_for(crow: Crow, task_type: str) -> bool:
    """Whether `task_type` is one of the task types the crow is best at."""
    return bool(task_type) and task_type in (crow.task_types or [])


def best_first(crows: Sequence[Crow], task_type: str, scores: Mapping[str, float]) -> list[str]:
    """The names of `crows` (given in roster order) best first: typed for the task type,
    then the higher score, then roster order. A crow missing from `scores` scores 0."""
    roster_order = {crow.name: n for n, crow in enumerate(crows)}
    return [
        crow.name for crow in sorted(
            crows,
            key=lambda crow: (
                not is_typed_for(crow, task_type), -scores.get(crow.name, 0.0), roster_order[crow.name],
            ),
        )
    ]
