"""The chatroom's bookkeeping beside the message log: requests and their claims, each
room's budget, and the log of every crow invocation (who was asked to speak, and why)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from nests.models.rooms import Nest, NestMessage


class ChatRequest(models.Model):
    """A message tagged `request`, with what dispatch and claims need to know about it.

    `requester` is whoever the work goes back to: the author, or the owner when Quill
    relays an owner's request on their behalf."""

    class Mode(models.TextChoices):
        SOLO = "solo"
        SPLIT = "split"
        CONSPIRACY = "conspiracy"

    class State(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        DELIVERED = "delivered"
        DECLINED = "declined"
        RELAYED = "relayed"

    message = models.OneToOneField(NestMessage, on_delete=models.CASCADE, related_name="chat_request")
    nest = models.ForeignKey(Nest, on_delete=models.CASCADE, related_name="chat_requests")
    requester = models.CharField(max_length=40)
    addressed = models.CharField(max_length=40, blank=True, default="")
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.SOLO)
    task_type = models.CharField(max_length=16, default="chat")
    state = models.CharField(max_length=12, choices=State.choices, default=State.OPEN)
    # The message this one relays (Quill carrying an owner's request), or "".
    relayed_from = models.CharField(max_length=80, blank=True, default="")
    # Set when Quill relays this request elsewhere: the msg_id of the relayed request.
    relayed_to = models.CharField(max_length=80, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.message.msg_id} ({self.mode}, {self.state})"


class Claim(models.Model):
    """One crow's claim on a request. solo/split: at most one, enforced by the database as
    well as by the nest lock; conspiracy: several, each a distinct lens, one per crow."""

    request = models.ForeignKey(ChatRequest, on_delete=models.CASCADE, related_name="claims")
    message = models.OneToOneField(NestMessage, on_delete=models.CASCADE, related_name="claim")
    crow = models.CharField(max_length=40)
    exclusive = models.BooleanField(help_text="True for solo/split, where the first claim wins.")
    lens = models.CharField(max_length=200, blank=True, default="")
    delivered = models.ForeignKey(
        NestMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["request"], condition=Q(exclusive=True), name="claim_first_wins"
            ),
            models.UniqueConstraint(fields=["request", "crow"], name="claim_once_per_crow"),
        ]


class NestBudget(models.Model):
    """A room's budgets (docs/CHATROOM.md): exchanges granted by the owner's latest message
    (unused ones do not carry over) and tokens per day. One row per room, locked while an
    invocation is granted, so two posts cannot both spend the last exchange."""

    nest = models.OneToOneField(Nest, on_delete=models.CASCADE, related_name="budget")
    turn = models.PositiveIntegerField(default=0)
    exchanges_granted = models.PositiveIntegerField(default=0)
    exchanges_left = models.PositiveIntegerField(default=0)
    day = models.DateField(null=True, blank=True)
    tokens_used = models.PositiveIntegerField(default=0)
    tokens_extra = models.PositiveIntegerField(default=0, help_text="Top-ups for `day`.")
    # Each wind-down is announced once: per turn for exchanges, per day for tokens.
    low_announced_turn = models.PositiveIntegerField(default=0)
    spent_announced_turn = models.PositiveIntegerField(default=0)
    tokens_low_announced = models.DateField(null=True, blank=True)
    tokens_spent_announced = models.DateField(null=True, blank=True)


class Invocation(models.Model):
    """The invocation log: every time the harness asks a crow to speak, with the reason and
    (for a fit-based choice) the score. One message invokes at most one crow: the unique
    trigger makes that a database fact, not only a habit of the dispatcher."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        SKIPPED = "skipped"
        FAILED = "failed"

    nest = models.ForeignKey(Nest, on_delete=models.CASCADE, related_name="invocations")
    crow = models.CharField(max_length=40)
    trigger = models.OneToOneField(NestMessage, on_delete=models.CASCADE, related_name="invocation")
    reason = models.CharField(max_length=24)
    expect = models.CharField(max_length=12)
    fit = models.FloatField(null=True, blank=True)
    # What the fit choice weighed, crow -> score, so the owner can see why.
    candidates = models.JSONField(default=dict, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    depth = models.PositiveIntegerField(default=0)
    turn = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    reply = models.ForeignKey(NestMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tokens = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["nest", "status"], name="invocation_nest_status")]

    def __str__(self) -> str:
        return f"{self.crow} on {self.trigger_id} ({self.reason}, {self.status})"
