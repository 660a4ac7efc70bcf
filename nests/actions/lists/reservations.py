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

from django.db.models import Case, F, Func, IntegerField, OuterRef, QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce

from nests.models import Banter, Sortie, TodoList


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
