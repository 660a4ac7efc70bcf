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
from flock.events import rfc3339
from flock.models import Crow
from flock.personas import TASK_TYPES
from flock.vocab import LEVEL_NAMES, OWNER, REGULAR
from nests import queries
from nests.actions.chat import moderator, orchestration, react
from nests.actions.chat.effects import Effects, Say
from nests.actions.chat.replies import Reply
from nests.actions.members import change_nest_members
from nests.actions.rooms import create_nest
from nests.models import ChatRequest, Invocation, Nest, NestMessage
from trust.actions import open_decision, retire_crow, seed_trust
from trust.models import Decision

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
# "hatch Wren for data, starting regular" (docs/GOVERNANCE.md, "3. Boss runs the flock"):
# a name right after the verb, and a starting trust for the task types named.
NOT_A_NAME = r"(?!(?:a|an|one|another|the|new|some|two|three|crows?|birds?)\b)"
HATCH_NAMED_RE = re.compile(
    rf"\b(?:hatch|spin\s+up)\s+{NOT_A_NAME}{NAME}"
    r"(?=\s*(?:,|$)|\s+(?:for|who|that|to\s+be|good|great|strong|best|using|on|with|running)\b)",
    re.IGNORECASE,
)
START_RE = re.compile(
    r",?\s*\b(?:start(?:ing|s)?|begin(?:ning|s)?)\s+(?:with\s+)?(?:(?:its\s+)?trust\s+)?(?:at\s+|as\s+)?(?:an?\s+)?"
    r"(?P<level>stranger|regular|trusted)\b(?:\s+(?:level|trust|crow|one))?",
    re.IGNORECASE,
)
LEVELS = {name: level for level, name in LEVEL_NAMES.items()}
# "add Inky to #launch", "remove Pepper from launch", "take Inky out of the ops nest".
CROW_WORDS = r"@?[A-Za-z][\w-]*(?:\s*(?:,|\band\b|&)\s*@?[A-Za-z][\w-]*)*"
MEMBERS_RE = re.compile(
    rf"\b(?P<verb>add|put|bring|invite|remove|take|drop|kick)\s+(?P<crows>{CROW_WORDS})\s+"
    r"(?:out\s+of|into|to|from|in)\s+(?:the\s+)?#?(?P<nest>[\w-]+)",
    re.IGNORECASE,
)
REMOVING = ("remove", "take", "drop", "kick")
THIS_ROOM = ("here", "this", "this-nest")
NOT_CROWS = {"a", "an", "the", "crow", "crows", "new", "some", "me", "it", "them"}
# Names Boss gives a crow the owner asked for without naming it ("I need a crow for X").
FRESH_NAMES = ("Wren", "Jackdaw", "Magpie", "Chough", "Jay", "Nutcracker", "Raven", "Sable", "Cinder", "Flint", "Slate", "Ember")


@dataclass(frozen=True)
class Order:
    verb: str  # hatch | model | nest | members | retire | ask (an order Boss cannot carry out as given)
    name: str
    strength: str = ""
    model: str = ""
    crows: tuple[str, ...] = ()
    # For `ask`: Boss's answer, what to say instead; never a pretend success from its brain.
    say: str = ""
    # A hatch's starting trust ("starting regular"), for the task types it names.
    level: int | None = None
    # A member order: the crows to take out (`crows` are added), the nest ("" is this room).
    removing: tuple[str, ...] = ()
    nest: str = ""


def fresh_crow_name() -> str:
    """A crow's name nobody has had (a retired crow's name stays taken)."""
    taken = {n.lower() for n in Crow.objects.values_list("name", flat=True)}
    for suffix in ("", *map(str, range(2, 100))):
        for name in FRESH_NAMES:
            if f"{name}{suffix}".lower() not in taken:
                return f"{name}{suffix}"
    return f"Crow{Crow.objects.count() + 1}"


def _members_order(words: str) -> Order | None:
    m = MEMBERS_RE.search(words)
    if m is None:
        return None
    crows = tuple(c.strip().lstrip("@") for c in LIST_SPLIT_RE.split(m.group("crows")) if c.strip())
    if not crows or any(c.lower() in NOT_CROWS for c in crows):
        return None
    nest = m.group("nest")
    nest = "" if nest.lower() in THIS_ROOM else nest
    if m.group("verb").lower() in REMOVING:
        return Order("members", "", removing=crows, nest=nest)
    return Order("members", "", crows=crows, nest=nest)


def _hatch_order(words: str, m: re.Match[str], level: int | None) -> Order:
    rest = words[m.end():]
    s = STRENGTH_RE.search(rest)
    strength = ""
    if s:
        strength = (s.group("strength") or s.group("purpose") or "").strip().rstrip(",")
    model = MODEL_RE.search(rest)
    bare = BARE_MODEL_RE.search(rest) if model is None else None
    if bare is not None:
        return Order("ask", m.group("name"), say=_which_provider(bare.group("bare"), "… using "))
    # A provider named alone ("using openai") means its default model (the registry's).
    model_spec = complete_spec(model.group("model")) if model else ""
    return Order("hatch", m.group("name"), strength=strength, model=model_spec, level=level)


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
    members = _members_order(words)
    if members is not None:
        return members
    start = START_RE.search(words)
    level = None
    if start is not None:
        level = LEVELS[start.group("level").lower()]
        words = (words[: start.start()] + words[start.end():]).strip()
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
        return _hatch_order(words, m, level)
    m = HATCH_NAMED_RE.search(words)
    if m:
        return _hatch_order(words, m, level)
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


def named_task_types(strength: str) -> list[str]:
    """The task types a hatch order names ("for data and research"), else Jev's reading."""
    words = set(re.findall(r"[a-z]+", strength.lower()))
    named = [t for t in TASK_TYPES if t in words]
    return named or _task_types(strength)


def hatch_phrase(order: Order) -> str:
    return f"yes, hatch {order.name} {LEVEL_NAMES[order.level or 0]}"


def _ask_to_start_high(order: Order, boss: Crow, inv: Invocation) -> str:
    """A starting trust above regular is the owner's to give: Boss asks for the approval
    phrase (an owner decision, docs/GOVERNANCE.md) and hatches nothing until it is said."""
    if Crow.objects.filter(name__iexact=order.name).exists():
        return f"Can't do that: the name {order.name} is taken (a retired crow's name stays taken)."
    types = ", ".join(named_task_types(order.strength)) or "its task types"
    phrase = hatch_phrase(order)
    decision = open_decision(
        subject=f"hatch {order.name}",
        question=f"Hatch {order.name} ({order.strength}) {LEVEL_NAMES[order.level or 0]} for {types} from the start?",
        phrase=phrase,
        recommendation=(
            "Start it regular and let your verdicts raise it: a crow earns trusted by its approved work."
        ),
        kind=Decision.Kind.CHOICE,
        nest_id=inv.nest.nest_id,
        refers_to=inv.trigger.msg_id,
        evidence=f"{boss.name} was asked in {inv.trigger.msg_id}: “{inv.trigger.text[:300]}”",
    )
    return (
        f"Starting a crow above regular needs your approval phrase: say exactly “{phrase}” "
        f"(here, or on the decision's card, {decision.decision_id}). Nothing is hatched until then, "
        f"and nothing is if you say anything else or nothing by {rfc3339(decision.deadline)}."
    )


def _hatch(order: Order, boss: Crow, inv: Invocation | None = None, *, approved: bool = False) -> str:
    if not order.strength:
        return f"Hatch {order.name} to be good at what? Say, for example, “hatch a crow named {order.name} who is good at data”."
    if (order.level or 0) > REGULAR and not approved:
        assert inv is not None
        return _ask_to_start_high(order, boss, inv)
    task_types = named_task_types(order.strength) if order.level is not None else _task_types(order.strength)
    # The crow and Jev's score of its model are one change: both land, or neither. A plain
    # atomic (a savepoint when nested): handle() turns a refusal into Boss's answer.
    with transaction.atomic():
        crow = hatch_crow(
            order.name,
            strength=order.strength,
            hatched_by=boss.name,
            model=order.model,
            task_types=task_types,
        )
        # The starting trust the owner named, as seeded approvals for each task type
        # (the ledger stays the whole truth: docs/GOVERNANCE.md, 3).
        for task_type in task_types if order.level else []:
            seed_trust(crow.name, task_type=task_type, level=order.level or 0, by=boss.name)
        # Boss picked the model: Jev scores it from the flight log (docs/GOVERNANCE.md, 7a).
        pick, nudge = orchestration.score_model_pick(
            crow, model_spec=crow.brain_spec, decider=boss.name,
            nest=inv.nest if inv is not None else None, msg_id=inv.trigger.msg_id if inv is not None else "",
        )
        if inv is not None:
            react.apply(nudge, room=inv.nest)
    if order.level:
        trust = (
            f"Trust starts at {order.level} ({LEVEL_NAMES[order.level]}) for {', '.join(task_types)}, "
            f"0 (stranger) for the rest"
            + (f"; as a regular, {crow.name} may claim open {', '.join(task_types)} requests. " if order.level == REGULAR
               else " (your approval phrase). ")
        )
    else:
        trust = f"Trust starts at 0 (stranger) for every task type, so {crow.name} speaks when addressed. "
    return (
        f"Hatched @{crow.name} {crow.epithet}: good at {crow.strength}. Brain: {crow.brain_spec}. "
        f"{trust}"
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


def _members(order: Order, boss: Crow, inv: Invocation) -> str:
    nest = inv.nest if not order.nest else queries.find_nest(order.nest)
    if nest is None:
        known = ", ".join(n.nest_id for n in queries.nests_for_listing())
        return f"Can't do that: there is no nest called “{order.nest[:60]}”. The nests are: {known}."
    changed, added, removed = change_nest_members(
        nest.nest_id, add=list(order.crows) or None, remove=list(order.removing) or None, by=boss.name,
    )
    did = "; ".join(
        part for part in (
            f"added {', '.join(added)} to" if added else "",
            f"took {', '.join(removed)} out of" if removed else "",
        ) if part
    )
    return f"Done: {did} {changed.name} ({changed.nest_id}). Its core is now {', '.join(changed.core)}."


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
    if not owners_order(trigger) or inv.reason not in ("addressed", "direct"):
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
        elif order.verb == "members":
            said = _members(order, boss, inv)
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


def owners_order(message: NestMessage) -> bool:
    """The owner's own words, or Quill's order on the owner's behalf ("I need a crow for
    X", docs/GOVERNANCE.md, 2): Boss answers both alike."""
    if message.author == OWNER:
        return True
    quill = queries.quill()
    return (
        quill is not None and message.author == quill.name
        and ChatRequest.objects.filter(message=message, requester=OWNER).exists()
    )


def hatch_on_approval(decision: Decision) -> None:
    """The owner's approval phrase for a crow started above regular: Boss hatches it as
    ordered (the order is re-read from the message it was given in) and says so in the
    room; any other answer, or none, hatches nothing, and Boss says that too. Wired as a
    trust `on_decision_closed` hook (nests/wiring.py)."""
    if decision.kind != Decision.Kind.CHOICE or not decision.phrase or not decision.subject.startswith("hatch "):
        return
    asked = NestMessage.objects.select_related("nest").filter(
        nest__nest_id=decision.nest_id, msg_id=decision.refers_to
    ).first()
    boss = queries.boss()
    if asked is None or boss is None:
        return
    room = Nest.objects.select_for_update().get(pk=asked.nest_id)
    order = parse_order(asked.text)
    if order is None or order.verb != "hatch":
        return
    if decision.outcome == decision.phrase:
        try:
            with transaction.atomic():
                said = _hatch(order, boss, approved=True)
        except CrowsError as refusal:
            said = f"Can't do that: {refusal.message}."
    else:
        said = f"No approval phrase for {decision.decision_id} ({decision.outcome}): {order.name} is not hatched."
    react.apply(Effects(say=[Say(
        author=boss.name, to=OWNER, refers_to=asked.msg_id, text=f"[ACK {asked.msg_id}] {said}",
    )]), room=room)
