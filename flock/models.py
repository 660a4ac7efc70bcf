"""Who the crows are, what they said to the world (the event log) and how they thought
(the flight log, Jev's tag log). The event, flight and tag logs are append-only."""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class Crow(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        QUARANTINED = "quarantined"
        RETIRED = "retired"

    class Role(models.TextChoices):
        WORKER = "worker"
        ASSISTANT = "assistant"
        CHIEF_OF_STAFF = "chief_of_staff"
        SENTRY = "sentry"
        ELDER = "elder"

    name = models.CharField(max_length=40, unique=True)
    epithet = models.CharField(max_length=120)
    strength = models.CharField(max_length=200)
    backstory = models.TextField()
    persona = models.TextField(help_text="The system-prompt paragraph: who it is and how it works.")
    voice = models.TextField(help_text="How it writes.")
    model = models.CharField(max_length=120, blank=True, help_text="provider:model; blank means CROWS_BRAIN.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.WORKER)
    # Roster crows can be core members of a nest; Sentry and Elder serve every nest instead.
    in_roster = models.BooleanField(default=True)
    task_types = models.JSONField(default=list, blank=True)
    relationships = models.JSONField(default=dict, blank=True)
    openers = models.JSONField(default=list, blank=True)
    closers = models.JSONField(default=list, blank=True)
    hatched_by = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name

    @property
    def brain_spec(self) -> str:
        from django.conf import settings

        return self.model or settings.CROWS_BRAIN


class CompactJSONEncoder(DjangoJSONEncoder):
    """Stores an event's payload exactly as flock.events.render_frame writes it, so a
    replay can send the stored text without decoding and encoding it again."""

    def __init__(self, *args, **kwargs):
        kwargs["separators"] = (",", ":")
        kwargs["ensure_ascii"] = False
        super().__init__(*args, **kwargs)


class Event(models.Model):
    """One row per SSE message. Its id is the SSE `id:`; only flock.events.emit writes here."""

    name = models.CharField(max_length=48)
    list_key = models.CharField(max_length=64, blank=True, default="")
    nest_key = models.CharField(max_length=64, blank=True, default="")
    payload = models.JSONField(encoder=CompactJSONEncoder)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["list_key", "id"], name="event_list_stream"),
            models.Index(fields=["nest_key", "id"], name="event_nest_stream"),
        ]

    def __str__(self) -> str:
        return f"{self.id} {self.name}"


class Flight(models.Model):
    """The flight log: one row per brain call, the data for choosing models (docs/GOVERNANCE.md)."""

    crow = models.CharField(max_length=40)
    provider = models.CharField(max_length=40)
    model = models.CharField(max_length=120)
    task = models.CharField(max_length=24, help_text="triage, answer, subtask, merge, banter, chat ...")
    task_type = models.CharField(max_length=16, blank=True)
    list_id = models.CharField(max_length=64, blank=True)
    item_id = models.CharField(max_length=64, blank=True)
    nest_id = models.CharField(max_length=64, blank=True)
    msg_id = models.CharField(max_length=80, blank=True)
    tokens_in = models.IntegerField(default=0)
    tokens_out = models.IntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    # What the crow was asked (system prompt and conversation), so the owner can read in
    # the flight log what a crew was told, a retry's note included (docs/REVIEW.md).
    prompt = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["model", "task_type"], name="flight_model_task")]


class JevTag(models.Model):
    """Every answer Jev gives, with its probabilities, so calibration can be studied later."""

    question = models.CharField(max_length=40)
    choice = models.CharField(max_length=40)
    band = models.CharField(max_length=8)
    probs = models.JSONField()
    impl = models.CharField(max_length=24)
    version = models.CharField(max_length=64)
    latency_ms = models.FloatField(default=0)
    subject = models.CharField(max_length=80, blank=True, help_text="What was tagged: a msg_id, item_id, crow ...")
    text = models.TextField(blank=True)
    # The kind that was finally used and how (jev/header/disagreement/default), when it differs.
    outcome = models.JSONField(default=dict, blank=True)
    # Who gave `choice`: "local" (the local model, whose `probs` these are) or "llm" (the
    # optional LLM second opinion on an unsure tag; `probs` stay the local model's and
    # `local_choice` its own pick). docs/JEV.md, "LLM second opinion".
    source = models.CharField(max_length=16, default="local")
    local_choice = models.CharField(max_length=40, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # GET /api/jev/tags?subject= (a message's kind, looked up as it arrives live).
        indexes = [models.Index(fields=["subject", "question"], name="jevtag_subject")]


class PrunedStream(models.Model):
    """How far retention has pruned one stream ("*", "list:<id>", "nest:<id>"): the newest
    event id it deleted there. A client whose cursor is below it missed events that are
    gone, so the stream tells it with `stream.reset` (docs/OPERATING.md "Retention")."""

    key = models.CharField(max_length=80, unique=True)
    through_id = models.BigIntegerField()
    pruned_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} pruned through {self.through_id}"


class TaskLease(models.Model):
    """A worker's claim on a running django-tasks-db task, renewed by its heartbeat. A task
    still RUNNING when its lease has run out lost its worker and is queued again."""

    task_id = models.UUIDField(primary_key=True)
    worker_id = models.CharField(max_length=64)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.task_id} by {self.worker_id} until {self.expires_at}"
