"""Governance: the Sentry's breach log and the owner's decisions (docs/GOVERNANCE.md).

Breach is append-only: one row per contract breach the Sentry saw, with Jev's score (or
1.0 for a harness guardrail hit) and the evidence, whether or not it led to a flag. A
Decision is the chatroom's ask_owner: a question with an exact approval phrase (or A/B
options) and a recommendation, open until the owner answers or its deadline passes.
"""

from __future__ import annotations

from django.db import models


class Breach(models.Model):
    """One contract breach seen by the Sentry. Never edited; `flagged` records whether it
    was the crow's first on this subject (the Sentry flags once per crow per subject)."""

    class Kind(models.TextChoices):
        REDO = "redo"
        IGNORED_DECLINE = "ignored_decline"
        FORBIDDEN_KIND = "forbidden_kind"
        FABRICATED_SOURCE = "fabricated_source"
        BUDGET_BLOWOUT = "budget_blowout"
        OFF_TASK_CLAIM = "off_task_claim"
        REPEATED_MISSES = "repeated_misses"
        OWNER_REPORT = "owner_report"  # quarantined by hand (the admin), not by the Sentry

    crow = models.CharField(max_length=40)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    score = models.FloatField(help_text="Jev's score, or 1.0 for a harness guardrail hit.")
    evidence = models.TextField()
    nest_id = models.CharField(max_length=64, blank=True, default="")
    # The offending message, and what the breach is about (a request or expectation id):
    # the Sentry flags at most once per crow per subject.
    msg_id = models.CharField(max_length=80, blank=True, default="")
    subject = models.CharField(max_length=80, blank=True, default="")
    flagged = models.BooleanField(default=False)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["crow", "subject"], name="breach_crow_subject")]
        verbose_name_plural = "breaches"

    def __str__(self) -> str:
        return f"{self.crow}: {self.kind} ({self.score:.2f})"


class Decision(models.Model):
    """An owner decision: reinstate-or-retire after a quarantine, or an A/B choice.

    Anything but the exact phrase (or a named option) is a no: fail safe."""

    class Kind(models.TextChoices):
        QUARANTINE = "quarantine"
        CHOICE = "choice"

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    class Outcome(models.TextChoices):
        REINSTATED = "reinstated"
        RETIRED = "retired"
        KEPT = "kept"  # anything but yes: the crow stays quarantined
        TIMEOUT = "timeout"  # no answer by the deadline: fail safe, as `kept`

    decision_id = models.CharField(max_length=24, unique=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.QUARANTINE)
    subject = models.CharField(max_length=120)
    crow = models.CharField(max_length=40, blank=True, default="")
    question = models.TextField()
    phrase = models.CharField(max_length=120, blank=True, default="")
    options = models.JSONField(default=list, blank=True)
    recommendation = models.CharField(max_length=300, blank=True, default="")
    evidence = models.TextField(blank=True, default="")
    nest_id = models.CharField(max_length=64, blank=True, default="")
    # The message that announced it in the room (the Sentry's flag), and the offending one.
    msg_id = models.CharField(max_length=80, blank=True, default="")
    refers_to = models.CharField(max_length=80, blank=True, default="")
    breach = models.ForeignKey(Breach, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    opened_at = models.DateTimeField()
    deadline = models.DateTimeField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    # For a choice decision, the option picked; otherwise one of Outcome.
    outcome = models.CharField(max_length=120, blank=True, default="")
    answer = models.CharField(max_length=300, blank=True, default="")
    answered_by = models.CharField(max_length=80, blank=True, default="")
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "deadline"], name="decision_open_deadline")]

    def __str__(self) -> str:
        return f"{self.decision_id} ({self.status}{': ' + self.outcome if self.outcome else ''})"
