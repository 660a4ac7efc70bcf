"""Boss, the chief of staff (docs/CHATROOM.md): on the owner's word, hatches crows, creates
nests with their members and retires idle crows.

The owner's order is read deterministically, so "hatch" never depends on a model's mood:

- "@Boss hatch a crow named Wren who is good at data [using openai:gpt-4o-mini]"
- "@Boss make a nest called Launch with Pepper and Inky"
- "@Boss retire Soot"

Boss carries the order out through the flock's and nests' own actions (crow.hatched,
nest.created, crow.retired) and says what it did, or why it did not, in the room. Any
other message to Boss goes to its brain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from flock import jev as jev_service
from flock import queries as flock_queries
from flock.actions import hatch_crow, update_crow
from flock.brains.registry import (
    MODEL_CHARS,
    PROVIDERS,
    WIRE_SCRIPT,
    complete_spec,
    names_pattern,
    provider_names,
)
from flock.errors import CrowsError
from flock.models import Crow
from flock.vocab import OWNER
from nests import queries
from nests.actions.chat import moderator, orchestration, react
from nests.actions.chat.replies import Reply
from nests.actions.rooms import create_nest
from nests.models import Invocation
from trust.actions import retire_crow

NAME = r"@?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,39})"
# The providers an order may name, from the one registry (flock/brains/registry.py): any
# to hatch on; a script's file is the operator's to pick, so not one to switch a crow to.
PROVIDER_WORDS = names_pattern()
SWITCHABLE_WORDS = names_pattern(tuple(p.name for p in PROVIDERS.values() if p.wire != WIRE_SCRIPT))
HATCH_RE = re.compile(rf"\b(?:hatch|spin\s+up|create|make)\b[^.!?]*?\b(?:crow|bird|one)?\s*(?:named|called)\s+{NAME}", re.IGNORECASE)
STRENGTH_RE = re.compile(
    r"\b(?:who(?:'s| is)\s+|that(?:'s| is)\s+|to\s+be\s+)?(?:good|great|strong|best)\s+at\s+(?P<strength>.+?)"
    rf"(?=\s+(?:on|using|with|running)\s+(?:the\s+)?(?:model\s+|brain\s+)?(?:{PROVIDER_WORDS})\b|[.;!?]|$)"
    rf"|\bfor\s+(?P<purpose>.+?)(?=\s+(?:on|using|with|running)\s+(?:the\s+)?(?:model\s+|brain\s+)?(?:{PROVIDER_WORDS})\b|[.;!?]|$)",
    re.IGNORECASE,
)
# "… using openai:gpt-4o", and the one after "switch Hugin to": the words before a model.
USING = r"\b(?:on|using|with|running)\s+(?:the\s+)?(?:model\s+|brain\s+)?"
SWITCH_TO = (
    rf"\b(?:switch|move|put|change|set|run)\s+{NAME}(?:'s\s+(?:model|brain))?\s+(?:to|on|onto)\s+(?:the\s+)?"
    r"(?:model\s+|brain\s+)?"
)
MODEL_RE = re.compile(rf"{USING}(?P<model>(?:{PROVIDER_WORDS})(?::{MODEL_CHARS}+)?)", re.IGNORECASE)
NEST_RE = re.compile(
    r"\b(?:make|create|start|open|set\s+up)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?nest\s+(?:called|named)\s+"
    r"(?P<name>.+?)\s+with\s+(?P<crows>.+?)[.!]?$",
    re.IGNORECASE | re.DOTALL,
)
RETIRE_RE = re.compile(rf"\bretire\s+{NAME}", re.IGNORECASE)
SWITCH_RE = re.compile(rf"{SWITCH_TO}(?P<model>(?:{SWITCHABLE_WORDS})(?::{MODEL_CHARS}+)?)", re.IGNORECASE)
LIST_SPLIT_RE = re.compile(r"\s*(?:,|\band\b|&|\+)\s*", re.IGNORECASE)
# What follows "named"/"called", whole: a name the NAME pattern only partly matched
# ("Wrén", "9lives", a 41-letter name, "Robert');") is refused, never cut down.
NAMED_TOKEN_RE = re.compile(r"\b(?:named|called)\s+@?(?P<token>\S+)", re.IGNORECASE)
NAME_RULE = "a crow's name is 1 to 40 letters, digits, _ or -, starting with a letter (A to Z)"
# An order to hatch that names no crow, or several at once.
HATCH_INTENT_RE = re.compile(
    r"\b(?:hatch|spin\s+up)\b|\b(?:create|make|add)\s+(?:a|an|another|one|two|three|some|\d+)?\s*(?:new\s+)?(?:crows?|birds?)\b",
    re.IGNORECASE,
)
SEVERAL_RE = re.compile(r"\b(?:two|three|four|five|several|some|\d+)\s+(?:new\s+)?(?:crows|birds)\b|\bcrows\s+(?:named|called)\b", re.IGNORECASE)
NEST_NAMED_RE = re.compile(r"\b(?:nest|room)\s+(?:named|called)\b", re.IGNORECASE)
# A model named without its provider ("using gpt-4o", "switch Hugin to claude-sonnet-4"):
# a known model family's name, so "running k8s clusters" or "move Rook to ops2" is not one.
MODEL_FAMILIES = "gpt|o[1-9]|claude|llama|mistral|mixtral|gemini|gemma|qwen|deepseek"
BARE_MODEL = rf"(?P<bare>(?:{MODEL_FAMILIES})(?:[-.:@]?[\w.@-]*)?)(?![\w:])"
BARE_MODEL_RE = re.compile(rf"{USING}{BARE_MODEL}", re.IGNORECASE)
SWITCH_BARE_RE = re.compile(rf"{SWITCH_TO}{BARE_MODEL}", re.IGNORECASE)


@dataclass(frozen=True)
class Order:
    verb: str  # hatch | model | nest | retire | ask (an order Boss cannot carry out as given)
    name: str
    strength: str = ""
    model: str = ""
    crows: tuple[str, ...] = ()
    # For `ask`: Boss's answer, what to say instead; never a pretend success from its brain.
    say: str = ""


def _whole_name(words: str, match: re.Match[str]) -> str | None:
    """The name as the owner wrote it, when the NAME pattern took only part of it."""
    whole = words[match.start("name"):].split(maxsplit=1)[0].rstrip(".,!?;:")
    return whole if whole.lower() != match.group("name").lower() else None


def _which_provider(model: str, order: str) -> str:
    """Boss's question for a model named without its provider: the registry's remote
    providers, the first as the example."""
    first, *others = provider_names(remote=True)
    rest = " or ".join(f"{p}:{model}" for p in others)
    return f"Which provider serves {model}? Say “{order}{first}:{model}”{f' (or {rest})' if rest else ''}: a model is provider:model."


def parse_order(text: str) -> Order | None:
    """The owner's order to Boss, or None when the message is not one."""
    # A name in double quotes ("named “Wren”") is the name.
    words = " ".join(text.replace("“", " ").replace("”", " ").replace('"', " ").split())
    m = NEST_RE.search(words)
    if m:
        crows = tuple(c.strip().lstrip("@").strip() for c in LIST_SPLIT_RE.split(m.group("crows")) if c.strip())
        return Order("nest", m.group("name").strip().strip("\"'“”"), crows=crows)
    m = SWITCH_RE.search(words)
    if m:
        return Order("model", m.group("name"), model=complete_spec(m.group("model")))
    m = SWITCH_BARE_RE.search(words)
    if m:
        bare = m.group("bare")
        return Order("ask", m.group("name"), say=_which_provider(bare, f"switch {m.group('name')} to "))
    if NEST_NAMED_RE.search(words):
        return Order("ask", "", say=(
            "Which crows should be in it? Say “make a nest called Launch with Hugin and Pepper”."
        ))
    if SEVERAL_RE.search(words) and HATCH_INTENT_RE.search(words):
        return Order("ask", "", say=(
            "One crow at a time: “hatch a crow named Wren who is good at writing”, then the next."
        ))
    m = HATCH_RE.search(words)
    if m:
        whole = _whole_name(words, m)
        if whole is not None:
            return Order("ask", whole, say=f"Can't hatch “{whole[:60]}”: {NAME_RULE}.")
        rest = words[m.end():]
        s = STRENGTH_RE.search(rest)
        strength = ""
        if s:
            strength = (s.group("strength") or s.group("purpose") or "").strip()
        model = MODEL_RE.search(rest)
        bare = BARE_MODEL_RE.search(rest) if model is None else None
        if bare is not None:
            return Order("ask", m.group("name"), say=_which_provider(bare.group("bare"), "… using "))
        # A provider named alone ("using openai") means its default model (the registry's).
        return Order("hatch", m.group("name"), strength=strength, model=complete_spec(model.group("model")) if model else "")
    m = RETIRE_RE.search(words)
    if m:
        return Order("retire", m.group("name"))
    if HATCH_INTENT_RE.search(words):
        named = NAMED_TOKEN_RE.search(words)
        if named is not None:
            return Order("ask", named.group("token"), say=f"Can't hatch “{named.group('token')[:60]}”: {NAME_RULE}.")
        return Order("ask", "", say=(
            "Name it and say what it is good at: “hatch a crow named Wren who is good at writing”."
        ))
    return None


def _opener(crow: Crow, seed: str) -> str:
    openers = list(crow.openers or []) or ["Right then."]
    return openers[sum(seed.encode()) % len(openers)]


def _roster_name(word: str) -> str:
    """A roster crow's name as the roster spells it, matched in any case."""
    for name in flock_queries.roster_names():
        if name.lower() == word.lower():
            return name
    return word


def _task_types(strength: str) -> list[str]:
    try:
        return [str(jev_service.ask("task_type", strength).choice)]
    except Exception:
        return []


def _hatch(order: Order, boss: Crow, inv: Invocation | None = None) -> str:
    if not order.strength:
        return f"Hatch {order.name} to be good at what? Say, for example, “hatch a crow named {order.name} who is good at data”."
    # The crow and Jev's score of its model are one change: both land, or neither. A plain
    # atomic (a savepoint when nested): handle() turns a refusal into Boss's answer.
    with transaction.atomic():
        crow = hatch_crow(
            order.name,
            strength=order.strength,
            hatched_by=boss.name,
            model=order.model,
            task_types=_task_types(order.strength),
        )
        # Boss picked the model: Jev scores it from the flight log (docs/GOVERNANCE.md, 7a).
        pick, nudge = orchestration.score_model_pick(
            crow, model_spec=crow.brain_spec, decider=boss.name,
            nest=inv.nest if inv is not None else None, msg_id=inv.trigger.msg_id if inv is not None else "",
        )
        if inv is not None:
            react.apply(nudge, room=inv.nest)
    return (
        f"Hatched @{crow.name} {crow.epithet}: good at {crow.strength}. Brain: {crow.brain_spec}. "
        f"Trust starts at 0 (stranger) for every task type, so {crow.name} speaks when addressed. "
        f"Say hello in dm-{crow.name.lower()}. Jev scores the model pick {pick.score:.2f} ({pick.decision_id})."
    )


def _change_model(order: Order, boss: Crow, inv: Invocation) -> str:
    crow = Crow.objects.filter(name__iexact=order.name).first()
    previous = crow.brain_spec if crow is not None else ""
    with transaction.atomic():  # as in _hatch
        with orchestration.boss_scores_the_pick():
            changed = update_crow(order.name, by=OWNER, model=order.model)
        if changed.brain_spec == previous:
            # update_crow changed nothing and emitted nothing: no pick to score either.
            return f"{changed.name} already thinks with {previous}: nothing to change."
        # The owner named the model: Jev scores the owner's pick (docs/GOVERNANCE.md, 7a), and
        # Boss says so when the flight log argues against it.
        pick, nudge = orchestration.score_model_pick(
            changed, model_spec=changed.brain_spec, decider=OWNER, nest=inv.nest, msg_id=inv.trigger.msg_id,
        )
        react.apply(nudge, room=inv.nest)
    warning = (
        f" Heads up: that is below the low band ({pick.factors.get('approval')} approval in the flight log)."
        if pick.band == "low" else ""
    )
    return (
        f"Moved {changed.name} from {previous} to {changed.brain_spec}. "
        f"Jev scores the model pick {pick.score:.2f} ({pick.decision_id}).{warning}"
    )


def _nest(order: Order, boss: Crow) -> str:
    crows = [_roster_name(c) for c in order.crows]
    nest = create_nest(order.name, crows=crows, created_by=boss.name)
    return (
        f"Nest {nest.name} ({nest.nest_id}) is up with {', '.join(nest.core)}. "
        "Quill and I serve it too. Counted, budgeted, done."
    )


def _retire(order: Order, boss: Crow, inv: Invocation) -> str:
    crow = Crow.objects.filter(name__iexact=order.name).first()
    if crow is not None:
        holding = queries.open_claims_of(crow.name)
        if holding:
            return f"{crow.name} isn't idle: it still holds {', '.join(holding)}. Not retiring it until that's delivered."
        busy = Invocation.objects.filter(
            crow=crow.name, status__in=(Invocation.Status.QUEUED, Invocation.Status.RUNNING)
        ).exclude(id=inv.id)
        if busy.exists():
            return f"{crow.name} isn't idle: it is speaking in a room right now. Ask me again in a moment."
    # Through trust's retire: a decision still open about the crow is closed with it.
    retired = retire_crow(order.name, by=boss.name, reason=f"the owner asked in {inv.trigger.msg_id}")
    return f"Retired {retired.name}, with the usual forty-second speech. Its rooms carry on without it."


def handle(inv: Invocation, boss: Crow) -> object:
    """Boss's answer to an owner's order (a Reply), or None to let its brain answer."""
    trigger = inv.trigger
    if inv.reason == "debate":
        # The owner asked for a debate: Boss moderates (docs/GOVERNANCE.md).
        started = moderator.start_debate(inv, boss)
        if isinstance(started, str):
            return Reply(text=f"[ACK {trigger.msg_id}] {_opener(boss, trigger.msg_id)} Can't start it: {started}",
                         refers_to=trigger.msg_id, to=OWNER, closes=True, fixed=True)
        return started
    if inv.reason == "debate_stop":
        stopped = moderator.stop_on_owners_word(inv, boss)
        if isinstance(stopped, str):
            return Reply(
                text=f"[ACK {trigger.msg_id}] {stopped}", refers_to=trigger.msg_id, to=OWNER, closes=True, fixed=True
            )
        return stopped
    if inv.reason == "nudge":
        return moderator.recue(inv, boss)
    if trigger.author != OWNER or inv.reason not in ("addressed", "direct"):
        return None
    order = parse_order(trigger.text)
    if order is None:
        return None
    try:
        if order.verb == "hatch":
            said = _hatch(order, boss, inv)
        elif order.verb == "model":
            said = _change_model(order, boss, inv)
        elif order.verb == "nest":
            said = _nest(order, boss)
        elif order.verb == "ask":
            said = order.say
        else:
            said = _retire(order, boss, inv)
    except CrowsError as refusal:
        said = f"Can't do that: {refusal.message}."
    return Reply(
        text=f"[ACK {trigger.msg_id}] {_opener(boss, trigger.msg_id)} {said}",
        refers_to=trigger.msg_id,
        to=OWNER,
        closes=True,
        fixed=True,
    )
