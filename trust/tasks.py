"""Background tasks of the trust app. Each is idempotent: a duplicate or a late run
finds its work done and returns."""

from __future__ import annotations

from django.tasks import task


@task()
def time_out_approval_task(item_id: str, target: str, attempt: int | None = None) -> str:
    from trust.actions.verdicts import time_out_approval

    # `attempt` is absent from tasks queued before retries existed: the newest attempt.
    verdict = time_out_approval(item_id, target=target, attempt=attempt)
    return verdict.verdict if verdict else "not due"


@task()
def expire_decision_task(decision_id: str) -> str:
    from trust.actions.decisions import expire_decision

    decision = expire_decision(decision_id)
    return decision.outcome if decision else "not due"
