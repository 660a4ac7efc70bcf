"""Token reservations and an item's tokens, computed from the rows instead of stored.

A budget (an item's or a list's) holds the estimate of every flight in the air and the
real count of every landed one. The list's real count is stored (`tokens_used`, written
at landing: list.finished reports it, and banter that lands after that report must not
move it); an item's is the sum of its attempt's landed sorties' tokens. The estimates
are the `estimate` of the item's or list's sorties and banter lines still FLYING, summed
when a take-off or a banter line decides. Storing them cost a take-off two writes (item
and list), every landing one more (the item), and every drop and recovery a write to
release them; and a stored sum can drift from the rows it sums.

The sums are exact when read under the list's row lock: every change of a list's sorties
or banter in the air (take-off, landing, drop, abort) locks that list first. On
PostgreSQL they must be read by a statement that starts after the lock is granted (each
statement of READ COMMITTED reads a fresh snapshot; a subquery in the locking statement
itself reads the snapshot taken before it waited); on SQLite every transaction holds the
database's one write lock from its BEGIN, so any statement of it is exact.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Case, Exists, F, Func, IntegerField, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from nests.models import Banter, Item, Sortie, TodoList


def _scalar(queryset: QuerySet[Any], function: str, field: str) -> Coalesce:
    """`(SELECT function(field) FROM …)`, 0 when no row: an aggregate without GROUP BY."""
    total = queryset.order_by().annotate(total=Func(F(field), function=function, output_field=IntegerField()))
    return Coalesce(Subquery(total.values("total")[:1]), Value(0), output_field=IntegerField())


def _flying_sorties() -> QuerySet[Sortie]:
    return Sortie.objects.filter(status=Sortie.Status.FLYING)


# Annotations of a Sortie row: what its take-off decides from (see the module's docstring
# for when they are exact). `in_air` counts the flock's flights against the cap (the
# gate's lock, or SQLite's write lock, makes it exact).
TAKE_OFF_LOADS = {
    "in_air": _scalar(_flying_sorties(), "COUNT", "id"),
    "item_load": _scalar(
        Sortie.objects.filter(item=OuterRef("item"), attempt=OuterRef("item__attempt")).annotate(
            load=Case(
                When(status=Sortie.Status.FLYING, then=F("estimate")),
                When(status=Sortie.Status.LANDED, then=F("tokens")),
                default=Value(0),
            )
        ),
        "SUM",
        "load",
    ),
    "list_reserved": Coalesce(
        _scalar(_flying_sorties().filter(todo_list=OuterRef("todo_list")), "SUM", "estimate")
        + _scalar(
            Banter.objects.filter(todo_list=OuterRef("todo_list"), status=Banter.Status.FLYING), "SUM", "estimate"
        ),
        Value(0),
        output_field=IntegerField(),
    ),
}

# An annotation of a Sortie row: whether any sortie waits for a slot (on SQLite a landing
# reads it with its locks, and hands over slots only when one does).
ANY_WAITING = Exists(Sortie.objects.filter(status=Sortie.Status.WAITING))

_SIBLING_WORKERS = Sortie.objects.filter(
    item=OuterRef("item"), attempt=OuterRef("item__attempt"), role=Sortie.Role.WORKER
).exclude(pk=OuterRef("pk"))

# What a SQLite landing reads with its locks (exact under the write lock its transaction
# holds from BEGIN), so its next step reads nothing more: whether a sortie waits for a
# slot; whether another item of the list is still open (after_item_ended); whether
# another worker of the item's attempt is still up, and whether one came back with an
# answer (after_worker_landed). PostgreSQL reads them after the locks instead: a
# subquery of the locking statement reads the snapshot taken before it waited, and would
# miss a sibling that landed meanwhile.
LANDING_READS = {
    "any_waiting": ANY_WAITING,
    "others_open": Exists(
        Item.objects.filter(todo_list=OuterRef("todo_list")).exclude(stage__in=Item.ENDED).exclude(pk=OuterRef("item"))
    ),
    "workers_up": Exists(_SIBLING_WORKERS.exclude(status__in=(Sortie.Status.LANDED, Sortie.Status.CANCELLED))),
    "workers_good": Exists(_SIBLING_WORKERS.filter(status=Sortie.Status.LANDED, ok=True)),
}


def list_reserved(todo: TodoList) -> int:
    """The estimates of the list's sorties and banter lines in the air (list locked)."""
    row = TodoList.objects.filter(pk=todo.pk).annotate(
        reserved=Coalesce(
            _scalar(_flying_sorties().filter(todo_list=OuterRef("pk")), "SUM", "estimate")
            + _scalar(Banter.objects.filter(todo_list=OuterRef("pk"), status=Banter.Status.FLYING), "SUM", "estimate"),
            Value(0),
            output_field=IntegerField(),
        )
    )
    return int(row.values_list("reserved", flat=True).get())
