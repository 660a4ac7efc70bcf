"""Reads of todo lists (the snapshot's open lists, one list's state for GET /api/lists/{id})."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from flock.events import rfc3339
from nests.models import Item, Sortie, TodoList
from nests.queries_review import mock_answered
from nests.render import render_markdown
from trust.models import Verdict


def open_lists() -> list[dict[str, Any]]:
    """Lists still flying, oldest first, with how many of their items have ended."""
    rows = (
        TodoList.objects.filter(status=TodoList.Status.FLYING)
        .annotate(total=Count("items"), ended=Count("items", filter=Q(items__stage__in=Item.ENDED)))
        .order_by("id")
    )
    return [
        {
            "list_id": t.list_id,
            "requester": t.requester,
            "nest_id": t.nest_id,
            "items": t.total,
            "items_ended": t.ended,
            "tokens_used": t.tokens_used,
            "token_budget": t.token_budget,
            "started_at": rfc3339(t.created_at),
        }
        for t in rows
    ]


def item_verdicts(item_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every verdict of these items, all attempts, in the order they were given."""
    out: dict[str, list[dict[str, Any]]] = {i: [] for i in item_ids}
    for v in Verdict.objects.filter(item_id__in=item_ids).order_by("attempt", "id"):
        out[v.item_id].append({
            "target": v.target,
            "verdict": v.verdict,
            "attempt": v.attempt,
            "reason": v.reason,
            "edited_text": v.edited_text,
            "overruled": v.overruled_at is not None,
            "decided_at": rfc3339(v.decided_at),
        })
    return out


def _current_output(verdicts: list[dict[str, Any]], attempt: int) -> dict[str, Any]:
    for v in verdicts:
        if v["target"] == "output" and v["attempt"] == attempt:
            return v
    return {}


def flight_failures(items: Sequence[Item]) -> dict[str, list[dict[str, str]]]:
    """Each item's failed flights of its current attempt, oldest first: the crow and the
    brain's own sentence, so a page or a report can say why an item failed (`failure`)."""
    attempts = {i.pk: (i.item_id, i.attempt) for i in items}
    failed = (
        Sortie.objects.filter(item_id__in=attempts, status=Sortie.Status.LANDED, ok=False)
        .exclude(error="")
        .order_by("id")
        .values_list("item_id", "attempt", "crow", "error")
    )
    out: dict[str, list[dict[str, str]]] = {}
    for item_pk, attempt, crow, error in failed:
        item_id, current = attempts[item_pk]
        if attempt == current:
            out.setdefault(item_id, []).append({"crow": crow, "error": error})
    return out


def list_state(list_id: str) -> dict[str, Any] | None:
    todo = TodoList.objects.filter(list_id=list_id).first()
    if todo is None:
        return None
    # An item's tokens are its attempt's landed sorties' (not stored: nests/actions/lists/reservations.py).
    landed = Sortie.objects.filter(item=OuterRef("pk"), attempt=OuterRef("attempt"), status=Sortie.Status.LANDED)
    tokens = landed.order_by().values("item").annotate(total=Sum("tokens")).values("total")
    items = list(
        todo.items.order_by("n").annotate(
            tokens_used=Coalesce(Subquery(tokens), Value(0), output_field=IntegerField())
        )
    )
    verdicts = item_verdicts([i.item_id for i in items])
    mock = mock_answered([i.item_id for i in items])
    failures = flight_failures(items)
    return {
        "list_id": todo.list_id,
        "requester": todo.requester,
        "nest_id": todo.nest_id,
        "status": todo.status,
        "tokens_used": todo.tokens_used,
        "token_budget": todo.token_budget,
        "started_at": rfc3339(todo.created_at),
        "finished_at": rfc3339(todo.finished_at) if todo.finished_at else None,
        "items": [
            {
                "item_id": i.item_id,
                "text": i.text,
                "stage": i.stage,
                "mode": i.mode,
                "task_type": i.task_type,
                "subtasks": i.subtasks,
                "reason": i.reason,
                "answer": i.answer,
                "crows": i.crows,
                "skip_reason": i.skip_reason if i.ended else "",  # a pending budget skip is not one yet
                "tokens_used": i.tokens_used,
                "attempt": i.attempt,
                "owner_note": i.owner_note,
                "edited_text": _current_output(verdicts[i.item_id], i.attempt).get("edited_text", ""),
                "overruled": bool(_current_output(verdicts[i.item_id], i.attempt).get("overruled")),
                "verdicts": verdicts[i.item_id],
                "answer_html": render_markdown(i.answer),
                "edited_html": render_markdown(_current_output(verdicts[i.item_id], i.attempt).get("edited_text", "")),
                "mock": i.item_id in mock,
                "failures": failures.get(i.item_id, []),
            }
            for i in items
        ],
    }


ARCHIVE_PAGE_SIZE = 20


def archive(q: str = "", page: int = 1, *, per_page: int = ARCHIVE_PAGE_SIZE) -> dict[str, Any]:
    """Every list, newest first, `per_page` at a time; `q` searches the list id, the
    requester, the nest, the items' text and their answers."""
    rows = TodoList.objects.order_by("-id")
    q = (q or "").strip()[:200]
    if q:
        rows = rows.filter(
            Q(list_id__icontains=q) | Q(requester__icontains=q) | Q(nest_id__icontains=q)
            | Q(items__text__icontains=q) | Q(items__answer__icontains=q)
        ).distinct()
    total = rows.count()
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    chunk = list(rows[(page - 1) * per_page: page * per_page])
    # Counted apart: annotated on the searched rows, Count would count only the items the
    # search matched (the filter's join), so a list of five read "1 item".
    n_items = dict(
        Item.objects.filter(todo_list__in=chunk).values("todo_list_id").annotate(n=Count("id")).values_list("todo_list_id", "n")
    )
    first_items: dict[int, list[str]] = {}
    for pk, text in Item.objects.filter(todo_list__in=chunk, n__lte=3).order_by("n").values_list("todo_list_id", "text"):
        first_items.setdefault(pk, []).append(text)
    return {
        "q": q,
        "page": page,
        "pages": pages,
        "total": total,
        "lists": [
            {
                "list_id": t.list_id,
                "requester": t.requester,
                "nest_id": t.nest_id,
                "status": t.status,
                "items": n_items.get(t.pk, 0),
                "first_items": first_items.get(t.pk, []),
                "started_at": rfc3339(t.created_at),
                "tokens_used": t.tokens_used,
            }
            for t in chunk
        ],
    }


VERDICT_WORDS = {
    "approved": "approved by the owner",
    "rejected": "rejected by the owner",
    "auto": "auto-approved (trusted)",
    "timeout": "timed out (counts as rejected)",
}


def report_markdown(list_id: str) -> str | None:
    """The list's report as a Markdown document (the report page's download)."""
    state = list_state(list_id)
    if state is None:
        return None
    out = [
        f"# List {state['list_id']}",
        "",
        f"- Requester: {state['requester']}",
        f"- Nest: #{state['nest_id']}",
        f"- Started: {state['started_at']}",
        f"- Status: {state['status']}" + (f", finished {state['finished_at']}" if state["finished_at"] else ""),
        f"- Tokens: {state['tokens_used']:,} of {state['token_budget']:,}",
        "",
    ]
    for n, item in enumerate(state["items"], start=1):
        out += [f"## {n}. {item['text']}", ""]
        facts = [f"stage {item['stage']}"]
        if item["mode"]:
            facts.append(f"{item['mode']} · {item['task_type']}")
        if item["crows"]:
            facts.append("by " + ", ".join(item["crows"]))
        if item["attempt"] > 1:
            facts.append(f"attempt {item['attempt']}")
        out += [f"*{' · '.join(facts)}*", ""]
        if item["owner_note"]:
            out += [f"> Owner's note for this attempt: {item['owner_note']}", ""]
        if item["mock"]:
            out += ["> Offline mock brain: placeholder answer.", ""]
        if item["edited_text"]:
            out += ["**Answer (edited by the owner):**", "", item["edited_text"], "",
                    "<details><summary>The crow's original</summary>", "", item["answer"], "", "</details>", ""]
        elif item["answer"]:
            out += [item["answer"], ""]
        if item["overruled"]:
            out += ["**Overruled by the owner.**", ""]
        if item["skip_reason"]:
            out += [f"Skipped: {item['skip_reason']}", ""]
        for failed in item["failures"]:
            out += [f"- {failed['crow']}'s flight failed: {failed['error']}"]
        if item["failures"]:
            out += [""]
        for v in item["verdicts"]:
            line = f"- {v['target']} (attempt {v['attempt']}): {VERDICT_WORDS.get(v['verdict'], v['verdict'])}"
            if v["overruled"]:
                line += ", later overruled"
            if v["edited_text"]:
                line += ", with the owner's edit"
            if v["reason"]:
                line += f". Reason: {v['reason']}"
            out.append(line)
        out.append("")
    return "\n".join(out).rstrip() + "\n"
