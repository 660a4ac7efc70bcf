"""Every state change in trust. One module per seam; import from here."""

from trust.actions.closing import on_decision_closed, withdraw_decisions
from trust.actions.decisions import (
    answer_decision,
    expire_decision,
    open_decision,
    reinstate_phrase,
    reschedule_decision_timeouts,
)
from trust.actions.ledger import record_trust_outcome, seed_trust
from trust.actions.owner import lift_cooldown, reset_trust
from trust.actions.quarantine import quarantine_crow, record_breach, reinstate_crow, retire_crow
from trust.actions.strikes import admit_post, on_strike, poster_key
from trust.actions.verdicts import (
    auto_verdict_if_trusted,
    emit_auto_verdict,
    on_overrule,
    on_verdict,
    open_approval,
    overrule_verdict,
    record_auto_verdict,
    record_owner_verdict,
    reschedule_timeouts,
    time_out_approval,
)

__all__ = [
    "answer_decision",
    "expire_decision",
    "on_decision_closed",
    "open_decision",
    "quarantine_crow",
    "record_breach",
    "reinstate_crow",
    "reinstate_phrase",
    "reschedule_decision_timeouts",
    "retire_crow",
    "admit_post",
    "auto_verdict_if_trusted",
    "emit_auto_verdict",
    "lift_cooldown",
    "on_overrule",
    "on_strike",
    "on_verdict",
    "open_approval",
    "overrule_verdict",
    "poster_key",
    "record_auto_verdict",
    "record_owner_verdict",
    "record_trust_outcome",
    "reschedule_timeouts",
    "reset_trust",
    "seed_trust",
    "time_out_approval",
    "withdraw_decisions",
]
