"""The owner's pages. Each page is a thin HTML shell; the static ES modules under
static/ui/ fetch the API and follow GET /api/events, so the page and any other client
see exactly the same contract. The views only check that the thing exists (a 404 page
instead of a blank shell) and hand the page, as JSON in the page, the few things no
endpoint serves: the settings it shows (budgets, the approval timeout), the cursor the
flock page's stream starts from, a crow's flights and trust history, and Jev's kind
probabilities for a room's messages. docs/UI.md describes the pages."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import views as staticfiles_views
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from flock import queries as flock_queries
from flock.api import crow_out
from flock.brains.config import default_brain_spec
from flock.brains.probe import is_mock, why_no_model
from flock.events import rfc3339
from flock.models import Crow, Event, Flight, JevTag
from flock.vocab import page_vocab
from nests import queries, queries_lists, queries_review
from nests.actions.messages import TEXT_MAX as MESSAGE_TEXT_MAX
from trust import queries as trust_queries

# How many recent lists the flock page shows on load, besides every list still open.
RECENT_LISTS = 6
# How far back the flock page looks for lists that are still open.
OPEN_LIST_LOOKBACK = 200
# How many of a room's Jev kind tags its page starts with.
KIND_TAGS = 500
# How many flights and trust entries a crow's page starts with.
RECENT_FLIGHTS = 15
TRUST_HISTORY = 200


def _ui_config() -> dict[str, Any]:
    """The settings the pages show; the server stays the judge of every one of them."""
    return {
        "approval_timeout_s": settings.CROWS_APPROVAL_TIMEOUT_S,
        "list_token_budget": settings.CROWS_LIST_TOKEN_BUDGET,
        "item_token_budget": settings.CROWS_ITEM_TOKEN_BUDGET,
        "exchanges_per_turn": settings.CROWS_EXCHANGES_PER_TURN,
        "nest_token_budget": settings.CROWS_NEST_TOKEN_BUDGET,
        "message_text_max": MESSAGE_TEXT_MAX,
    }


def _brain_readiness(default: str) -> dict[str, Any]:
    """Which living crows can really call a model, and why the others cannot, for the
    banner on every page (grouped by reason: the offline mock, a provider with no key)."""
    living = list(flock_queries.living_crows().values_list("name", "model"))
    able: list[str] = []
    unable: dict[str, list[str]] = {}
    for name, model in living:
        why = why_no_model(model or default)
        if why:
            unable.setdefault(why, []).append(name)
        else:
            able.append(name)
    mock_crows = [name for name, model in living if is_mock(model or default)]
    return {
        "able_crows": able,
        "unable_groups": [(", ".join(names), why) for why, names in unable.items()],
        "unable_count": sum(len(names) for names in unable.values()),
        "mock_everyone": len(mock_crows) == len(living),
        "crow_count": len(living),
    }


def _page(request: HttpRequest, template: str, page: str, **context: Any) -> HttpResponse:
    # The vocabularies (message kinds, the owner/harness/Sentry names, trust levels) come
    # from their one source, flock/vocab.py, so the pages never spell their own.
    ui = {"page": page, "config": _ui_config(), "vocab": page_vocab(), **context.pop("ui", {})}
    # Every page says which crows think with the offline mock, all or some (docs/REVIEW.md).
    brain = default_brain_spec()
    return render(request, template, {
        "ui": ui, "page": page, "default_brain": brain, "brain_is_mock": is_mock(brain),
        **_brain_readiness(brain),
        **context,
    })


def _flock_page_cursor() -> int:
    """The firehose cursor that replays the recent and still-open lists from their start.

    The firehose opened without a cursor starts live, so the page asks for `since` this id:
    the event just before the oldest list it wants to draw. Everything after it is replayed
    in order through the same code that handles live events."""
    newest = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    started = list(
        Event.objects.filter(name="list.started")
        .order_by("-id")
        .values_list("id", "list_key")[:OPEN_LIST_LOOKBACK]
    )
    if not started:
        return newest
    finished = set(
        Event.objects.filter(name="list.finished", list_key__in=[key for _, key in started])
        .values_list("list_key", flat=True)
    )
    wanted = [event_id for event_id, key in started[:RECENT_LISTS]]
    wanted += [event_id for event_id, key in started[RECENT_LISTS:] if key not in finished]
    return min(wanted) - 1


@never_cache
def home(request: HttpRequest) -> HttpResponse:
    # A fresh install (no list ever sent) offers its first step: connect a model, or try
    # the flock offline; the browser remembers the owner's choice (docs/UI.md).
    first_run = not Event.objects.filter(name="list.started").exists()
    return _page(request, "nests/home.html", "flock", ui={"since": _flock_page_cursor(), "first_run": first_run})


def nests_index(request: HttpRequest) -> HttpResponse:
    return redirect("nest", nest_id="todo")


@never_cache
def nest(request: HttpRequest, nest_id: str) -> HttpResponse:
    if not queries.nest_exists(nest_id):
        raise Http404(f"no such nest: {nest_id}")
    return _page(
        request, "nests/nest.html", "nests", nest_id=nest_id,
        # Which crow messages the offline mock brain wrote: the page badges them (docs/REVIEW.md).
        ui={"nest_id": nest_id, "kind_probs": _kind_probs(nest_id), "mock": queries_review.mock_written_in(nest_id),
            # Deliveries are answers: shown as their rendered Markdown (docs/REVIEW.md).
            "delivery_html": queries_review.deliveries_rendered_in(nest_id)},
    )


def _kind_probs(nest_id: str) -> dict[str, dict[str, float]]:
    """Jev's probabilities for the kind of each of the room's recent messages, for the
    hover on a message's tag. The message record does not carry them; the tag log does."""
    own = rf"^{re.escape(nest_id)}-[0-9]+$"
    rows = (
        JevTag.objects.filter(question="kind", subject__regex=own)
        .order_by("-id")
        .values_list("subject", "probs")[:KIND_TAGS]
    )
    return {subject: probs for subject, probs in reversed(rows)}


@never_cache
def crow(request: HttpRequest, name: str) -> HttpResponse:
    found = flock_queries.crow_named(name)
    if found is None:
        raise Http404(f"no such crow: {name}")
    # The crow's own flights and trust history come with the page: GET /api/flightlog
    # summarises per model and GET /api/trust gives today's levels, and the page adds
    # what happens next from the event stream.
    flights = [
        {
            "task": f.task,
            "task_type": f.task_type,
            "list_id": f.list_id,
            "item_id": f.item_id,
            "nest_id": f.nest_id,
            "msg_id": f.msg_id,
            "model": f"{f.provider}:{f.model}",
            "tokens": f.tokens_in + f.tokens_out,
            "latency_ms": round(f.latency_ms, 1),
            "ok": f.ok,
            "error": f.error[:200],
            "at": rfc3339(f.created_at),
        }
        for f in Flight.objects.filter(crow=found.name).order_by("-id")[:RECENT_FLIGHTS]
    ]
    history = trust_queries.trust_history(found.name, limit=TRUST_HISTORY)
    return _page(
        request,
        "nests/crow.html",
        "crows",
        ui={
            "crow": found.name,
            "flights": flights,
            "trust_history": history,
            "breaches": trust_queries.breaches_of(found.name),
            # GET /api/crows leaves a retired crow out, so its page brings who it was.
            "retired": crow_out(found).model_dump() if found.status == Crow.Status.RETIRED else None,
        },
        crow_name=found.name,
    )


@never_cache
def trust(request: HttpRequest) -> HttpResponse:
    holders = [trust_queries.FLOCK_HOLDER, *(c.name for c in flock_queries.living_crows())]
    history = {holder: trust_queries.trust_history(holder, limit=TRUST_HISTORY) for holder in holders}
    # GET /api/crows leaves retired crows out; the table still shows their rows, marked.
    retired = list(Crow.objects.filter(status=Crow.Status.RETIRED).values_list("name", flat=True))
    return _page(request, "nests/trust.html", "trust", ui={"trust_history": history, "retired": retired})


@never_cache
def list_report(request: HttpRequest, list_id: str) -> HttpResponse:
    if not Event.objects.filter(name="list.started", list_key=list_id).exists():
        raise Http404(f"no such list: {list_id}")
    return _page(request, "nests/list.html", "flock", ui={"list_id": list_id}, list_id=list_id)


@never_cache
def list_report_markdown(request: HttpRequest, list_id: str) -> HttpResponse:
    text = queries_lists.report_markdown(list_id)
    if text is None:
        raise Http404(f"no such list: {list_id}")
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{list_id}.md"'
    return response


@never_cache
def review(request: HttpRequest) -> HttpResponse:
    return _page(request, "nests/review.html", "review")


@never_cache
def settings_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "nests/settings.html", "settings", no_stream=True)


@never_cache
def archive(request: HttpRequest) -> HttpResponse:
    try:
        page = int(request.GET.get("page") or 1)
    except ValueError:
        page = 1
    found = queries_lists.archive(request.GET.get("q", ""), page)
    return _page(request, "nests/archive.html", "lists", found=found, no_stream=True)


def glossary(request: HttpRequest) -> HttpResponse:
    return _page(request, "nests/glossary.html", "glossary", no_stream=True)


def static_file(request: HttpRequest, path: str) -> HttpResponseBase:
    """Serves static/ through the staticfiles finders, so `daphne` alone serves the UI
    with DEBUG off and no collectstatic step. The files are small and few; a deployment
    behind a web server can serve STATIC_ROOT instead."""
    response = staticfiles_views.serve(request, path, insecure=True)
    # Revalidate every load (a 304 is cheap), so an edited module is never stale.
    response["Cache-Control"] = "no-cache"
    return response
