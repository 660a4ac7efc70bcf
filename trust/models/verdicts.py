"""Approvals and verdicts (docs/LISTS.md "Approvals and trust").

Every target (an item's triage, an item's output) gets exactly one Verdict: the unique
constraint on (item_id, target) is the last word when two answers race, and the actions
lock the Approval row first so the loser sees the winner's verdict and gets a 404 rather
than an IntegrityError. An Approval is a target waiting for the owner; one with no
verdict yet is pending. Auto verdicts (trust skipped approval) have no Approval.
"""

from __future__ import annotations

from django.db import models


class Target(models.TextChoices):
    TRIAGE = "triage"
    OUTPUT = "output"


class Approval(models.Model):
    """A target waiting for the owner until `deadline`; then it times out (fail safe)."""

    item_id = models.CharField(max_length=80)
    target = models.CharField(max_length=8, choices=Target.choices)
    list_id = models.CharField(max_length=64)
    # A chat delivery's approval belongs to its room (item_id is the deliver's msg_id and
    # list_id is empty); its verdict goes on that room's stream.
    nest_id = models.CharField(max_length=64, blank=True, default="")
    task_type = models.CharField(max_length=16)
    # Whose trust the owner's answer moves: ["flock"] for triage, the contributing crows
    # for an output.
    holders = models.JSONField(default=list)
    # A retried item (docs/REVIEW.md) flies again as attempt 2, 3 ...: each attempt has its
    # own approvals and verdicts.
    attempt = models.PositiveSmallIntegerField(default=1)
    opened_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item_id", "target", "attempt"], name="approval_once_per_attempt")
        ]
        indexes = [models.Index(fields=["deadline"], name="approval_deadline")]

    def __str__(self) -> str:
        return f"{self.item_id}/{self.target}"


class Verdict(models.Model):
    class Value(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"
        AUTO = "auto"
        TIMEOUT = "timeout"

    item_id = models.CharField(max_length=80)
    target = models.CharField(max_length=8, choices=Target.choices)
    list_id = models.CharField(max_length=64)
    nest_id = models.CharField(max_length=64, blank=True, default="")
    verdict = models.CharField(max_length=8, choices=Value.choices)
    approval = models.OneToOneField(
        Approval, null=True, blank=True, on_delete=models.PROTECT, related_name="verdict"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    # The owner's words (docs/REVIEW.md): why a rejection or an overrule, and an answer the
    # owner corrected before approving it (the crow's original stays on the item).
    reason = models.TextField(blank=True, default="")
    edited_text = models.TextField(blank=True, default="")
    # Whose work it judged and for which task type, kept for an auto verdict too, so the
    # owner can overrule it later and demote exactly those holders.
    task_type = models.CharField(max_length=16, blank=True, default="")
    holders = models.JSONField(default=list, blank=True)
    overruled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item_id", "target", "attempt"], name="verdict_once_per_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.item_id}/{self.target}: {self.verdict}"

    @property
    def passed(self) -> bool:
        """Whether the work may go on: an owner's yes or trust's auto. Fail safe otherwise."""
        return self.verdict in (self.Value.APPROVED, self.Value.AUTO)
