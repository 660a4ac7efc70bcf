"""The trust ledger (docs/LISTS.md "Approvals and trust").

Append-only: every owner verdict on a holder's work adds one TrustEntry per holder and
task type, carrying the running level and streak after it, the way a bank ledger carries
its balance. A holder's level is a query over its entries (the newest one's `level`),
never a mutable column. An entry's `seq` numbers its holder's entries for the task type
(1, 2, …), unique with them: an append computes its entry from the newest and takes the
next number, so of two racing appends one loses on the constraint and appends again from
the other's balance (trust/actions/ledger.py). TrustHolder names each holder that has
entries, for the admin.
"""

from __future__ import annotations

from django.db import models

from flock.vocab import LEVEL_NAMES, REGULAR, STRANGER, TRUSTED  # noqa: F401  (one source: flock/vocab.py)


class TrustHolder(models.Model):
    """One holder ("flock" or a crow's name) for one task type, made with its first entry."""

    holder = models.CharField(max_length=40)
    task_type = models.CharField(max_length=16)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["holder", "task_type"], name="trust_holder_once")]

    def __str__(self) -> str:
        return f"{self.holder}/{self.task_type}"


class TrustEntry(models.Model):
    """One owner judgment on a holder's work, with the level and streak it left behind."""

    class Outcome(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"
        RESET = "reset"  # the owner put the holder back to stranger

    class Source(models.TextChoices):
        VERDICT = "verdict"  # the owner answered an approval
        SEED = "seed"  # recorded by `manage.py trust_seed` (a setup step, not a verdict)
        RESET = "reset"  # the owner's Reset-to-stranger in the admin

    holder = models.CharField(max_length=40)
    task_type = models.CharField(max_length=16)
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.VERDICT)
    level_before = models.PositiveSmallIntegerField()
    level = models.PositiveSmallIntegerField(help_text="The level after this entry.")
    streak = models.PositiveIntegerField(help_text="Consecutive approvals since the last level change, after this entry.")
    list_id = models.CharField(max_length=64, blank=True, default="")
    item_id = models.CharField(max_length=80, blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)
    seq = models.PositiveIntegerField(default=0, help_text="This entry's number among its holder's for the task type.")

    class Meta:
        indexes = [models.Index(fields=["holder", "task_type", "id"], name="trust_entry_holder")]
        constraints = [models.UniqueConstraint(fields=["holder", "task_type", "seq"], name="trust_entry_seq_once")]
        verbose_name_plural = "trust entries"

    def __str__(self) -> str:
        return f"{self.holder}/{self.task_type} {self.outcome} -> {self.level}"
