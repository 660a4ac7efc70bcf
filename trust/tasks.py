"""Background tasks of the trust app. Each is idempotent: a duplicate or a late run
finds its work done and returns. The actions schedule them through trust.actions.timers,
which TrustConfig.ready() wires to `schedule_approval_timeout` and `schedule_decision_expiry`."""

from __future__ import annotations

from datetime import datetime

from django.tasks import task

from trust.actions.decisions import expire_decision
from trust.actions.verdicts import time_out_approval


@task()
def time_out_approval_task(item_id: str, target: str, attempt: int | None = None) -> str:
    # `attempt` is absent from tasks queued before retries existed: the newest attempt.
    verdict = time_out_approval(item_id, target=target, attempt=attempt)
    return verdict.verdict if verdict else "not due"


@task()
def expire_decision_task(decision_id: str) -> str:
    decision = expire_decision(decision_id)
    return decision.outcome if decision else "not due"


def schedule_approval_timeout(item_id: str, target: str, attempt: int, at: datetime) -> None:
    time_out_approval_task.using(run_after=at).enqueue(item_id, target, attempt)


def schedule_decision_expiry(decision_id: str, at: datetime) -> None:
    expire_decision_task.using(run_after=at).enqueue(decision_id)
