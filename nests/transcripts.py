"""Histories as readable transcripts (`manage.py replay_list` / `replay_nest`).

A list's transcript is read from its event stream, the record of what happened to it;
a nest's from its stored messages, which outlive retention's pruning of the event log."""

from __future__ import annotations

import json
from typing import Any

from flock.models import Event
from nests.models import Nest, NestMessage, TodoList


def _quote(text: str, markdown: bool) -> list[str]:
    prefix = "> " if markdown else "    "
    return [f"{prefix}{line}".rstrip() for line in (text or "").splitlines() or [""]]


def _quote_all(lines: list[str], markdown: bool) -> list[str]:
    return [quoted for line in lines for quoted in _quote(line, markdown)]


def _describe(name: str, p: dict[str, Any], markdown: bool) -> tuple[str, list[str]]:
    """(one line, the lines under it) for one list event."""
    code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    item = code(p.get("item_id", ""))
    if name == "list.started":
        items = [f"{n}. {i['text']}" for n, i in enumerate(p.get("items", []), 1)]
        return f"list started by {p.get('requester', '?')} in nest {p.get('nest_id', 'todo')}, {len(items)} item(s)", items
    if name == "item.triaged":
        wait = "waits for the owner" if p.get("needs_approval") else "no approval needed"
        subtasks = [f"- {s}" for s in p.get("subtasks") or []]
        return f"{item} triaged: {p.get('mode')} {p.get('task_type')} ({wait}); {p.get('reason', '')}", subtasks
    if name == "crow.flying":
        return f"{p.get('crow')} flies for {item}{' (borrowed)' if p.get('borrowed') else ''}", []
    if name == "crow.landed":
        how = f"ok, {p.get('tokens', 0)} tokens" if p.get("ok") else f"failed: {p.get('error', '')}"
        return f"{p.get('crow')} landed from {item}: {how}", []
    if name == "item.answered":
        wait = ", waits for the owner" if p.get("needs_approval") else ""
        return f"{item} answered by {', '.join(p.get('crows', []))}{wait}", _quote(p.get("answer", ""), markdown)
    if name == "verdict":
        by = f" (by {p['by']})" if p.get("by") else ""
        attempt = f", attempt {p['attempt']}" if p.get("attempt") else ""
        edited = ", with the owner's edit" if p.get("edited") else ""
        reason = [f"reason: {p['reason']}"] if p.get("reason") else []
        return f"{item} {p.get('target')} verdict: {p.get('verdict')}{edited}{attempt}{by}", _quote_all(reason, markdown)
    if name == "verdict.overruled":
        reason = [f"reason: {p['reason']}"] if p.get("reason") else []
        attempt = f", attempt {p['attempt']}" if p.get("attempt") else ""
        return f"{item} answer overruled by {p.get('by', 'owner')}{attempt}", _quote_all(reason, markdown)
    if name == "item.retried":
        note = [f"note: {p['note']}"] if p.get("note") else []
        return f"{item} retried by {p.get('by', 'owner')}: attempt {p.get('attempt')} (was {p.get('previous', '')})", _quote_all(note, markdown)
    if name == "trust.changed":
        return f"trust of {p.get('holder')} for {p.get('task_type')}: {p.get('from')} -> {p.get('to')}", []
    if name == "item.skipped":
        return f"{item} skipped: {p.get('reason', '')}", []
    if name == "crow.banter":
        return f"{p.get('crow')} to {p.get('to')} (banter on {item}): “{p.get('text', '')}”", []
    if name == "requester.pranked":
        return f"requester pranked for {p.get('cooldown_s')}s: {p.get('message', '')}", []
    if name == "list.finished":
        return f"list finished: {p.get('tokens_used')} of {p.get('token_budget')} tokens used", []
    rest = {k: v for k, v in p.items() if k not in ("list_id", "ts")}
    return f"{name} {json.dumps(rest, ensure_ascii=False)}", []


def list_transcript(list_id: str, *, markdown: bool = False) -> list[str] | None:
    """The list's history, one event a line (answers quoted below theirs); None if unknown."""
    todo = TodoList.objects.filter(list_id=list_id).first()
    events = Event.objects.filter(list_key=list_id).order_by("id")
    if todo is None and not events.exists():
        return None
    lines: list[str] = []
    if markdown:
        lines.append(f"# List {list_id}")
        if todo is not None:
            lines += ["", f"Requester **{todo.requester}**, nest `{todo.nest_id}`, {todo.status}, "
                      f"{todo.tokens_used} of {todo.token_budget} tokens.", ""]
    else:
        lines.append(f"List {list_id}" + (f" ({todo.status}, requester {todo.requester}, nest {todo.nest_id})" if todo else ""))
    for event in events.iterator():
        head, body = _describe(event.name, event.payload, markdown)
        when = event.created_at.strftime("%Y-%m-%d %H:%M:%S")
        if markdown:
            lines.append(f"- `{when}` **{event.name}**: {head}")
            lines += [f"  {line}" for line in body]
        else:
            lines.append(f"[{when}] {head}")
            lines += [f"    {line}" if not line.startswith("    ") else line for line in body]
    return lines


def nest_transcript(nest_id: str, *, markdown: bool = False, last: int = 0) -> list[str] | None:
    """The nest's messages in order; None if there is no such nest."""
    nest = Nest.objects.filter(nest_id=nest_id).first()
    if nest is None:
        return None
    messages = NestMessage.objects.filter(nest=nest).order_by("n")
    if last:
        messages = messages.reverse()[:last]
        rows = list(reversed(list(messages)))
    else:
        rows = list(messages)
    members = ", ".join(nest.core) or "the whole flock"
    if markdown:
        lines = [f"# Nest {nest.name} (`{nest.nest_id}`)", "", f"Core: {members}. {len(rows)} message(s).", ""]
    else:
        lines = [f"Nest {nest.name} ({nest.nest_id}), core: {members}"]
    for m in rows:
        when = m.created_at.strftime("%Y-%m-%d %H:%M:%S")
        to = f" -> @{m.to}" if m.to else ""
        refers = f", re {m.refers_to}" if m.refers_to else ""
        if markdown:
            lines.append(f"**{m.author}**{to} · {m.kind} · `{m.msg_id}`{refers} · {when}")
            lines.append("")
            lines += _quote(m.text, True)
            lines.append("")
        else:
            lines.append(f"[{when}] {m.msg_id} {m.author}{to} ({m.kind}{refers}): {m.text}")
    return lines
