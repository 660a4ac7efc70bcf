"""The words every real brain is given: the system prompt and the conversation.

``system_prompt`` is shared by all providers so a crow is the same crow whichever model
runs it. It holds the persona, the task's instructions and rules, the caller's extra
system text and, for a chat turn that answers a message, the contract footer.
"""

from __future__ import annotations

import json
import math
from typing import Any

from flock.brains.header import contract_footer
from flock.brains.types import BrainRequest, Persona

# One sentence per task: what the crow must produce. Details follow from the context.
_TASK_RULES: dict[str, str] = {
    "triage": (
        "You are triaging one todo item for the flock. Reply with ONE JSON object and nothing "
        'else: {"mode": "solo" | "split" | "murder", "task_type": "writing" | "research" | '
        '"code" | "planning" | "data" | "chat", "subtasks": [...], "reason": "..."}. '
        "solo: one crow can do it. split: it has 2-4 separate parts; list them in subtasks, "
        "each in the item's own words. murder: it is a judgment call that gains from 2-3 crows "
        "answering independently. subtasks is [] unless mode is split. reason is one plain "
        "sentence for the owner."
    ),
    "answer": (
        "Answer this todo item for the owner. Be concrete: restate the goal in a line, then "
        "give the 2-4 steps or points that get it done, then one closing line in your voice."
    ),
    "subtask": (
        "You are doing one part of a larger todo item; other crows do the other parts. "
        "Answer only your part, concretely, in a few lines."
    ),
    "merge": (
        "Several crows each did one part of this item. Merge their parts into one answer "
        "for the owner, in order, without losing anything that matters. Name the crow whose "
        "part you use."
    ),
    "synthesise": (
        "Several crows answered the same question independently. Synthesise one answer: "
        "where they agree, where they differ, and your recommendation. Name the crows."
    ),
    "banter": (
        "Write ONE line of in-character banter addressed to the named crow: under 40 words, "
        "no line breaks, no hashtags, playful rather than cruel. It is an aside, not part of "
        "any answer."
    ),
    "chat": (
        "You are talking in a nest (a chat room) with the owner and other crows. When you "
        "respond to a message, open your reply with exactly one header on the first line: "
        "[CLAIM <msg_id>] to take a request, [RESULT <msg_id>] to deliver it, "
        "[DECLINE <msg_id>] <reason> to refuse it, [ACK <msg_id>] to acknowledge, "
        "[NO-ACTION <msg_id>] <reason> when nothing is needed, or [REFER <name>] to point "
        "to an artifact by name. Address people with @name; a result goes back to whoever "
        "asked. Once a request is claimed by another crow you may review it but not redo it."
    ),
}

_RULES = (
    "Rules: be useful first and in character second. Never claim to have done, run, "
    "searched or checked anything you have not; say plainly what you do not know. "
    "Never invent sources, quotes, links or numbers."
)


def estimate_tokens(text: str) -> int:
    """A rough token count for text without a tokenizer: about 1.3 tokens per word."""
    words = len(text.split())
    return math.ceil(words * 1.3) if words else 0


def persona_line(persona: Persona) -> str:
    """'Hugin the Far-Flyer' or 'Hugin, Far-Flyer' (whichever reads right)."""
    epithet = persona.epithet.strip()
    if not epithet:
        return persona.name
    return f"{persona.name} {epithet}" if epithet.lower().startswith("the ") else f"{persona.name}, {epithet}"


def _persona_block(persona: Persona) -> str:
    lines = [
        (
            f"You are {persona_line(persona)}, a crow in the flock of so-many-crows, where a "
            "human owner and a flock of AI crows work together."
        )
        if persona.crow
        else f"You are {persona_line(persona)}, working for the flock of so-many-crows."
    ]
    if persona.persona.strip():
        lines.append(persona.persona.strip())
    if persona.strength.strip():
        lines.append(f"Your strength: {persona.strength.strip()}.")
    if persona.backstory.strip():
        lines.append(f"Backstory: {persona.backstory.strip()}")
    if persona.voice.strip():
        lines.append(f"Your voice (how you write): {persona.voice.strip()}")
    return "\n".join(lines)


def describe_part(part: Any) -> tuple[str, str]:
    """(crow, text) from a merge part, which may be a dict or a plain string."""
    if isinstance(part, dict):
        crow = str(part.get("crow") or part.get("name") or part.get("author") or "a crow")
        text = part.get("text") or part.get("answer") or part.get("content") or ""
        subtask = part.get("subtask") or ""
        text = str(text)
        if subtask:
            text = f"({subtask}) {text}"
        return crow, text
    return "a crow", str(part)


def describe_event(event: Any) -> str:
    """A short phrase for a recent flock event (an event payload, docs/API.md, or a plain string)."""
    if not isinstance(event, dict):
        return " ".join(str(event).split())[:160]
    name = str(event.get("event") or event.get("name") or event.get("type") or "")
    inner = event.get("data")
    data: dict[Any, Any] = inner if isinstance(inner, dict) else event
    crow = str(data.get("crow") or data.get("author") or "")
    if name == "crow.landed":
        if data.get("ok") is False:
            return f"{crow or 'a crow'} came back empty-clawed" + (
                f" ({data['error']})" if data.get("error") else ""
            )
        return f"{crow or 'a crow'} landed with an answer"
    if name == "verdict":
        return f"the owner's verdict came in: {data.get('verdict', 'unknown')}"
    if name == "trust.changed":
        holder = data.get("holder", "someone")
        up = (data.get("to") or 0) > (data.get("from") or 0)
        return f"{holder} was {'promoted' if up else 'demoted'} for {data.get('task_type', 'some work')}"
    if name == "item.skipped":
        return f"an item was skipped ({data.get('reason', 'no reason given')})"
    if name == "item.triaged":
        return f"Sentry called an item {data.get('mode', 'solo')}"
    if name == "requester.pranked":
        return "a prankster got a cooldown"
    # An answer's own text reads badly quoted in a one-line aside: name who answered.
    if name == "item.answered":
        crows = [str(c) for c in data.get("crows") or []]
        return f"{' and '.join(crows) or 'the flock'} turned in an answer"
    if name == "crow.flying":
        return f"{crow or 'a crow'} took off"
    if name == "list.started":
        items = data.get("items") or []
        return f"{data.get('requester') or 'someone'} sent a list of {len(items)} item{'s' if len(items) != 1 else ''}"
    text = data.get("text") or data.get("answer") or ""
    if text:
        return " ".join(str(text).split())[:160]
    return name.replace(".", " ") or "something happened"


def task_brief(request: BrainRequest) -> str:
    """The concrete matter of the task, drawn from ``context``: the item, parts, listener."""
    ctx = request.context or {}
    task = request.task
    out: list[str] = []
    item = str(ctx.get("item_text") or "").strip()
    if task == "subtask":
        if ctx.get("subtask"):
            out.append(f"Your part: {ctx['subtask']}")
        if item:
            out.append(f"The whole item (for context only): {item}")
    elif item:
        out.append(f"Item: {item}")
    if ctx.get("task_type"):
        out.append(f"Task type: {ctx['task_type']}")
    if ctx.get("mode") and task != "triage":
        out.append(f"Mode: {ctx['mode']}")
    if task in ("merge", "synthesise"):
        for crow, text in (describe_part(p) for p in ctx.get("parts") or []):
            out.append(f"--- from {crow} ---\n{text.strip()}")
    if task in ("banter", "chat"):
        listener = str(ctx.get("listener") or "")
        if listener:
            out.append(f"Speak to: @{listener}")
            relation = request.persona.relationships.get(listener)
            if relation:
                out.append(f"How you see {listener}: {relation}")
        events = [describe_event(e) for e in (ctx.get("recent_events") or [])][-5:]
        if events:
            out.append("Recent in the flock: " + "; ".join(events))
    if task == "chat":
        if ctx.get("nest_id"):
            out.append(f"Nest: {ctx['nest_id']}")
        if ctx.get("msg_id"):
            who = ctx.get("requester") or "the requester"
            out.append(f"You are answering message {ctx['msg_id']} from @{who}.")
        if ctx.get("expect"):
            out.append(f"The room expects a {ctx['expect']} from you now.")
    if ctx.get("owner_note"):
        out.append(f"The owner's note on this retry (follow it): {ctx['owner_note']}")
    if ctx.get("budget_note"):
        out.append(f"Budget: {ctx['budget_note']}")
    if not out:
        extra = {k: v for k, v in ctx.items() if k not in ("parts", "recent_events")}
        if extra:
            out.append("Context: " + json.dumps(extra, default=str, sort_keys=True)[:2000])
    return "\n".join(out)


def system_prompt(request: BrainRequest) -> str:
    """The system prompt for ``request``: persona, voice, task rules, extra system, footer.

    When the request carries no messages, the task brief becomes the user turn instead
    (see ``conversation``), so it is not repeated here.
    """
    blocks = [_persona_block(request.persona)]
    rules = _TASK_RULES.get(request.task)
    blocks.append(f"Task ({request.task}): {rules}" if rules else f"Task: {request.task}.")
    if request.task in ("banter", "chat") and request.persona.relationships:
        rel = "\n".join(f"- {name}: {line}" for name, line in request.persona.relationships.items())
        blocks.append(f"How you see the other crows:\n{rel}")
    blocks.append(f"{_RULES} Keep the reply under {request.max_tokens} tokens.")
    if _has_messages(request):
        brief = task_brief(request)
        if brief:
            blocks.append(f"Task details:\n{brief}")
    if request.system.strip():
        blocks.append(request.system.strip())
    msg_id = str((request.context or {}).get("msg_id") or "")
    if request.task == "chat" and msg_id:
        blocks.append(contract_footer(msg_id))
    return "\n\n".join(blocks)


def _has_messages(request: BrainRequest) -> bool:
    return any(_content(m) for m in request.messages or [])


def _content(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    return content.strip() if isinstance(content, str) else ""


def conversation(request: BrainRequest) -> list[dict[str, str]]:
    """The messages to send: user/assistant turns, alternating, starting with the user.

    Empty turns are dropped, unknown roles count as the user, and consecutive turns of one
    role are joined, because several chat templates (llama.cpp, vLLM with some models)
    reject a conversation whose roles do not alternate. With no usable messages, the task
    brief is the one user turn.
    """
    turns: list[dict[str, str]] = []
    for message in request.messages or []:
        content = _content(message)
        if not content:
            continue
        role = "assistant" if message.get("role") == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + content
        else:
            turns.append({"role": role, "content": content})
    if not turns:
        turns.append({"role": "user", "content": task_brief(request) or "Go ahead."})
    elif turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": task_brief(request) or "(conversation continues)"})
    # A conversation ending on the crow's own turn would be read by Anthropic as a reply to
    # continue mid-sentence (prefill); the crow is being asked for a new turn instead.
    if turns[-1]["role"] == "assistant":
        turns.append({"role": "user", "content": "(Your turn.)"})
    return turns


def prompt_text(request: BrainRequest) -> str:
    """The whole prompt as one readable text, for the flight log: the system prompt, then
    each turn headed by its role."""
    turns = "\n\n".join(f"[{turn['role']}]\n{turn['content']}" for turn in conversation(request))
    return f"[system]\n{system_prompt(request)}\n\n{turns}".strip()


def prompt_tokens(request: BrainRequest) -> int:
    """The estimated tokens of what a request sends (system prompt and conversation):
    what the mock counts as its tokens in, and what a budget must hold before a call."""
    return estimate_tokens(system_prompt(request)) + sum(estimate_tokens(t["content"]) for t in conversation(request))
