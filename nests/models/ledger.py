"""Work that doesn't stall (docs/GOVERNANCE.md): the expectation ledger, debates and the
orchestration log.

- `Expectation`: something a crow said it would do or was asked to do, tracked until it is
  met, escalated to the owner, or missed for good. The harness owns the row: the nudge
  count and the due time live here, so both survive a restart.
- `Debate`: one opt-in debate in a room (docs/GOVERNANCE.md), moderated by Boss: who argues
  which stance, who judges, the rounds and whose turn it is.
- `OrchestrationDecision`: every pick of a crow for a request, or of a model for a crow,
  with Jev's score of the fit (docs/GOVERNANCE.md).
"""

from __future__ import annotations

from django.db import models

from nests.models.chat import ChatRequest
from nests.models.rooms import Nest, NestMessage


class Debate(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        FINISHED = "finished"
        # Ended early: the owner stopped it, or a debater, the judge or the moderator was
        # quarantined, retired or left the room (docs/GOVERNANCE.md).
        STOPPED = "stopped"

    class Phase(models.TextChoices):
        ARGUING = "arguing"
        FINAL = "final"  # final positions
        JUDGING = "judging"
        DONE = "done"

    debate_id = models.CharField(max_length=24, unique=True)
    nest = models.ForeignKey(Nest, on_delete=models.CASCADE, related_name="debates")
    question = models.TextField()
    moderator = models.CharField(max_length=40)
    # The debaters in speaking order, and the stance each argues.
    crows = models.JSONField(default=list)
    stances = models.JSONField(default=dict)
    judge = models.CharField(max_length=40)
    rounds = models.PositiveSmallIntegerField()
    # True when the owner asked for a fixed turn order; otherwise the opener rotates.
    turn_order = models.BooleanField(default=False)
    round = models.PositiveSmallIntegerField(default=0)
    phase = models.CharField(max_length=8, choices=Phase.choices, default=Phase.ARGUING)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    # Who must speak next ("" when nobody), and the message that cued them.
    cued = models.CharField(max_length=40, blank=True, default="")
    cue_msg_id = models.CharField(max_length=80, blank=True, default="")
    # Every turn taken: [{"round", "crow", "stance", "msg_id", "text"}] (round 0 = final).
    turns = models.JSONField(default=list)
    finals = models.JSONField(default=dict)
    verdict = models.TextField(blank=True, default="")
    winner = models.CharField(max_length=40, blank=True, default="")
    asked_msg_id = models.CharField(max_length=80)
    kickoff_msg_id = models.CharField(max_length=80, blank=True, default="")
    verdict_msg_id = models.CharField(max_length=80, blank=True, default="")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.debate_id


class Expectation(models.Model):
    class Check(models.TextChoices):
        PROMISE_KEPT = "promise_kept"
        REQUESTER_ANSWER = "requester_answer"
        SINGLE_OWNER = "single_owner"
        ROUNDS_COMPLETED = "rounds_completed"
        TURN_ORDER = "turn_order"
        # Opened when a delivery fails them, or by the owner's correction (docs/GOVERNANCE.md, 4-6).
        CLAIMS_SOURCED = "claims_sourced"
        CORRECTION_HANDLED = "correction_handled"
        ROLE_ADHERENCE = "role_adherence"
        DISTINCT_LENS = "distinct_lens"

    class Status(models.TextChoices):
        OPEN = "open"
        MET = "met"
        MISSED = "missed"
        ESCALATED = "escalated"

    # Still owed: `open` until it falls due, `missed` once the harness nudges for it. Both
    # end `met` (delivered, even late) or `escalated` (to the owner).
    LIVE = (Status.OPEN, Status.MISSED)
    # Checks the debate closes itself; the ledger's scoring and Jev leave them alone.
    DEBATE_CHECKS = (Check.ROUNDS_COMPLETED, Check.TURN_ORDER)
    # Checks on how a piece of work was done, not whether: the work being delivered does
    # not settle them, and they are nudged at once when opened.
    CONDUCT_CHECKS = (Check.CLAIMS_SOURCED, Check.CORRECTION_HANDLED, Check.ROLE_ADHERENCE, Check.DISTINCT_LENS)
    # Nudged once only: at their next due time the owner hears of them instead.
    ONCE_CHECKS = (Check.DISTINCT_LENS,)

    expectation_id = models.CharField(max_length=24, unique=True)
    nest = models.ForeignKey(Nest, on_delete=models.CASCADE, related_name="expectations")
    message = models.ForeignKey(NestMessage, on_delete=models.CASCADE, related_name="expectations")
    request = models.ForeignKey(
        ChatRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="expectations"
    )
    debate = models.ForeignKey(Debate, null=True, blank=True, on_delete=models.SET_NULL, related_name="expectations")
    crow = models.CharField(max_length=40)
    check_name = models.CharField("check", max_length=20, choices=Check.choices, db_column="check_name")
    # What is expected, in words, for nudges and the owner's summary.
    expected = models.CharField(max_length=300)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    due_at = models.DateTimeField()
    # Where the due time came from: "text" (the promise named a time) or "default".
    due_from = models.CharField(max_length=8, default="default")
    nudges = models.PositiveSmallIntegerField(default=0)
    nudge_msg_ids = models.JSONField(default=list)
    # The latest scoring: met / missed / pending, with a confidence in [0, 1].
    scored = models.CharField(max_length=8, default="pending")
    confidence = models.FloatField(default=0.0)
    # Jev's reading of the message that opened it (question `expectation`), or {}.
    jev = models.JSONField(default=dict, blank=True)
    outcome_msg_id = models.CharField(max_length=80, blank=True, default="")
    summary_msg_id = models.CharField(max_length=80, blank=True, default="")
    reason = models.CharField(max_length=300, blank=True, default="")
    opened_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["nest", "status"], name="expectation_nest_status")]

    def __str__(self) -> str:
        return f"{self.expectation_id} ({self.crow}, {self.check}, {self.status})"


class OrchestrationDecision(models.Model):
    class Kind(models.TextChoices):
        CROW = "crow"  # a crow picked for a request
        MODEL = "model"  # a model picked for a crow

    decision_id = models.CharField(max_length=24, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # Who decided: Quill, Boss, the owner, or the harness's own dispatch.
    decider = models.CharField(max_length=40)
    crow = models.CharField(max_length=40)
    model = models.CharField(max_length=160, blank=True, default="")
    task = models.TextField(blank=True, default="")
    task_type = models.CharField(max_length=16, blank=True, default="")
    score = models.FloatField()
    band = models.CharField(max_length=8)  # low / ok
    # What the score weighed (fit, trust, recent results; cost, speed, approval rate) and
    # the alternatives it was compared with.
    factors = models.JSONField(default=dict)
    alternatives = models.JSONField(default=dict)
    nest_id = models.CharField(max_length=64, blank=True, default="")
    msg_id = models.CharField(max_length=80, blank=True, default="")
    nudge_msg_id = models.CharField(max_length=80, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.decision_id} {self.decider} picked {self.model or self.crow} ({self.score:.2f})"
