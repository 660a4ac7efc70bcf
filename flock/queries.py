"""Reads of the flock app."""

from __future__ import annotations

from django.db.models import QuerySet

from flock.models import Crow


def living_crows() -> QuerySet[Crow]:
    """Every crow that is not retired, in hatch order."""
    return Crow.objects.exclude(status=Crow.Status.RETIRED).order_by("id")


def roster_names() -> list[str]:
    """The crows that can be core members of a nest (not Sentry or Elder, not retired)."""
    return list(living_crows().filter(in_roster=True).values_list("name", flat=True))


def crow_named(name: str) -> Crow | None:
    return Crow.objects.filter(name=name).first()
