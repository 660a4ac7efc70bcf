"""Todo lists and their pipeline: a list, its items, the sorties flown for them (one row
per crow flight, the Sentry's and the Elder's included) and the banter between crows.

The rows are the state machine; background tasks move them on. Every task locks the rows
it decides from, so a duplicate task (a restart re-queues what a dead process was
running) finds the work done, or still claimed by a live flight, and returns.
"""

from __future__ import annotations

from django.db import models


class TodoList(models.Model):
    class Status(models.TextChoices):
        FLYING = "flying"
        FINISHED = "finished"

    list_id = models.CharField(max_length=16, unique=True)
    requester = models.CharField(max_length=80)
    nest_id = models.CharField(max_length=64)
    text = models.TextField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.FLYING)
    # The budget in force when the list was accepted; later setting changes do not move it.
    token_budget = models.PositiveIntegerField()
    # Real tokens of landed flights and banter; the estimates of those in the air are
    # summed from their rows (nests/actions/lists/reservations.py).
    tokens_used = models.PositiveIntegerField(default=0)
    banter_started = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the last item ended: list.finished waits at most CROWS_BANTER_WAIT_S from here.
    items_done_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["requester", "status"], name="todolist_requester")]

    def __str__(self) -> str:
        return self.list_id


class Item(models.Model):
    class Stage(models.TextChoices):
        TRIAGE = "triage"  # the Sentry's sortie is planned or flying
        TRIAGE_REVIEW = "triage_review"  # waiting for the owner's verdict on the triage
        FLYING = "flying"  # worker sorties
        MERGING = "merging"  # the Elder merges or synthesises
        OUTPUT_REVIEW = "output_review"  # waiting for the owner's verdict on the answer
        ANSWERED = "answered"  # ended: answered and approved (or auto)
        SKIPPED = "skipped"  # ended: skipped with `skip_reason`

    ENDED = (Stage.ANSWERED, Stage.SKIPPED)

    todo_list = models.ForeignKey(TodoList, on_delete=models.CASCADE, related_name="items")
    n = models.PositiveSmallIntegerField()
    item_id = models.CharField(max_length=24, unique=True)
    text = models.TextField()
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.TRIAGE)
    mode = models.CharField(max_length=8, blank=True)
    task_type = models.CharField(max_length=16, blank=True)
    subtasks = models.JSONField(default=list, blank=True)
    reason = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    crows = models.JSONField(default=list, blank=True)
    skip_reason = models.CharField(max_length=40, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # A retry (docs/REVIEW.md) flies the item again as the next attempt, with the owner's
    # note in every crew prompt of that attempt.
    attempt = models.PositiveSmallIntegerField(default=1)
    owner_note = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["todo_list", "n"]
        constraints = [models.UniqueConstraint(fields=["todo_list", "n"], name="item_number")]

    def __str__(self) -> str:
        return self.item_id

    @property
    def ended(self) -> bool:
        return self.stage in self.ENDED


class Sortie(models.Model):
    """One crow's flight for one item: the Sentry's triage, a worker's answer or part, the
    Elder's merge or synthesis. Counts toward CROWS_MAX_IN_FLIGHT while FLYING."""

    class Role(models.TextChoices):
        SENTRY = "sentry"
        WORKER = "worker"
        ELDER = "elder"

    class Status(models.TextChoices):
        PLANNED = "planned"  # its task is queued
        WAITING = "waiting"  # for a free slot in the flock; a landing hands one over
        FLYING = "flying"
        LANDED = "landed"
        CANCELLED = "cancelled"  # never flew: its item ended first, or the budget said no

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="sorties")
    todo_list = models.ForeignKey(TodoList, on_delete=models.CASCADE, related_name="sorties")
    role = models.CharField(max_length=8, choices=Role.choices)
    crow = models.CharField(max_length=40)
    borrowed = models.BooleanField(default=False)
    task = models.CharField(max_length=12)  # the brain task: triage, answer, subtask, merge, synthesise
    subtask = models.TextField(blank=True)
    n = models.PositiveSmallIntegerField(default=0)
    attempt = models.PositiveSmallIntegerField(default=1)  # the item's attempt it flew for
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PLANNED)
    # The process flying it; a flight claimed by a dead process is taken over after restart.
    claimed_by = models.CharField(max_length=40, blank=True)
    estimate = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    ok = models.BooleanField(null=True)
    error = models.TextField(blank=True)
    text = models.TextField(blank=True)
    waiting_since = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    landed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["status", "waiting_since"], name="sortie_status"),
        ]

    def __str__(self) -> str:
        return f"sortie {self.pk} {self.crow} ({self.role})"


class Banter(models.Model):
    """One generated aside between two crows of a list (at most two per list)."""

    class Status(models.TextChoices):
        FLYING = "flying"
        SPOKEN = "spoken"
        DROPPED = "dropped"  # failed, empty or unusable, or it came after list.finished

    todo_list = models.ForeignKey(TodoList, on_delete=models.CASCADE, related_name="banter")
    item_id = models.CharField(max_length=24)
    speaker = models.CharField(max_length=40)
    listener = models.CharField(max_length=40)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.FLYING)
    estimate = models.PositiveIntegerField(default=0)
    tokens = models.PositiveIntegerField(default=0)
    text = models.TextField(blank=True)
    why_dropped = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    landed_at = models.DateTimeField(null=True, blank=True)


class FlightGate(models.Model):
    """The one row every flight start and landing locks, so counting the flock's flights
    in the air and handing a freed slot to the oldest waiting sortie never race.

    On PostgreSQL it also carries the count (nests/actions/lists/flights.py): a take-off
    counts itself in with one `UPDATE … WHERE in_air < cap`, a landing counts itself out
    with one `UPDATE … RETURNING waiting`, each of which locks the row and reads its
    newest version. SQLite counts the rows instead, under the write lock every one of its
    transactions holds, and leaves these columns alone."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    # PostgreSQL: the sorties FLYING, counted at take-off and landing (recounted from the
    # rows at each start-up recovery).
    in_air = models.PositiveIntegerField(default=0)
    # PostgreSQL: a sortie may be WAITING for a slot. Set by a take-off that waits, under
    # the row's lock; cleared by a hand-over that finds none left to wake. A landing that
    # finds it unset hands nothing over and reads no sortie.
    waiting = models.BooleanField(default=False)


class CrowRotation(models.Model):
    """A nest's crew rotation (docs/LISTS.md "Crew"): the crows that have had their turn in
    the current round, within its core and outside it (borrowed). A round ends when every
    crow of that side has had one. `turns` counts the picks, so a pick can tell whether
    another moved the rotation on since it read it."""

    nest_id = models.CharField(max_length=64, unique=True)
    core_taken = models.JSONField(default=list, blank=True)
    outside_taken = models.JSONField(default=list, blank=True)
    turns = models.PositiveIntegerField(default=0)
