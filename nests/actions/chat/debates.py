"""Opt-in debate mode (docs/GOVERNANCE.md).

Only the owner starts one ("debate this: …", "have them argue", "let Hugin and Munin
debate whether …"): dispatch hands the order to Boss, the moderator, who reads it
deterministically (`start_debate`):

- the debaters: the crows the owner names, else the room's first two core crows; the
  judge: the crow named as judge ("Pepper judges", "judge: Pepper"), else another core
  crow, else Quill; the rounds: "three rounds" (CROWS_DEBATE_ROUNDS otherwise, 1–5); turn
  order: "take turns" / "Munin goes first" fixes the order for every round (otherwise the
  opener alternates, for fairness);
- the question: the order's own words, else the owner's previous message in the room.

Boss posts the kickoff (question, stances, judge, rules, rounds, final-position format)
and cues one speaker at a time: a round opens with its first speaker, then each turn cues
the next; after the last round, final positions; then the judge's call closes it. Each cue
invokes its crow (an exchange) and opens a `turn_order` expectation, so a crow that does
not answer is nudged; the kickoff opens `rounds_completed` for the moderator. A debater
(or the judge) who posts while another crow is cued is out of turn: the post is not
counted and the harness nudges it (`[NUDGE <msg_id>] [nudge n/3] …`); after three, the
owner gets the summary instead. Events: `debate.started`, `debate.round` (a round opened
or completed), `debate.finished` (`status` finished, or stopped with its `reason`).

A debate stops early, with nothing more owed by anyone, when the owner tells Boss to stop
it ("stop the debate"), or when a debater, the judge or the moderator is quarantined,
retired or leaves the room: it could never finish, and its turns would otherwise be nudged
until the ledger blamed crows that did nothing wrong.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flock.events import emit, lock_event_log, register_event_names, rfc3339
from flock.models import Crow
from flock.vocab import HARNESS, HARNESS_AUTHORS, OWNER
from nests import queries
from nests.models import Debate, Expectation, Invocation, Nest, NestMessage

register_event_names("debate.started", "debate.round", "debate.finished")

MAX_ROUNDS = 5
DEBATE_RE = re.compile(
    r"\b(?:debate\s+(?:this|it|that|whether|if|about|on)|debate\s*:|have\s+(?:them|\w+\s+and\s+\w+)\s+(?:argue|debate)|"
    r"let\s+(?:them|\w+\s+and\s+\w+)\s+(?:argue|debate)|make\s+them\s+(?:argue|debate)|"
    r"(?:start|hold|run|open|want|have)\s+a\s+debate|a\s+debate\s+(?:between|on|about)|let'?s\s+debate|"
    r"(?:argue|debate)\s+it\s+out|(?:argue|debate)\s+(?:this|it)\s+out)\b",
    re.IGNORECASE,
)
ROUNDS_RE = re.compile(r"\b(\d|one|two|three|four|five)\s+rounds?\b", re.IGNORECASE)
ROUND_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
JUDGE_RES = (
    re.compile(r"\bjudge(?:d)?\s*(?::|by|is|=)?\s*@?(?P<name>[A-Za-z][\w-]{0,39})", re.IGNORECASE),
    re.compile(r"@?(?P<name>[A-Za-z][\w-]{0,39})\s+(?:judges|judging|will\s+judge|as\s+(?:the\s+)?judge|can\s+judge)\b", re.IGNORECASE),
)
FIRST_RE = re.compile(r"@?(?P<name>[A-Za-z][\w-]{0,39})\s+(?:goes|speaks|opens)\s+first|@?(?P<name2>[A-Za-z][\w-]{0,39})\s+first\b", re.IGNORECASE)
STOP_RE = re.compile(
    r"\b(?:stop|end|cancel|halt|abort|kill|close|call\s+off)\s+(?:the\s+|this\s+|that\s+|our\s+|your\s+)?debate\b"
    r"|\bcall\s+(?:the\s+|this\s+|that\s+)?debate\s+off\b",
    re.IGNORECASE,
)
TURNS_RE = re.compile(r"\b(?:take\s+turns|in\s+turn|turn\s+order|one\s+at\s+a\s+time|strict\s+order|goes\s+first|speaks\s+first)\b", re.IGNORECASE)
MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z][\w-]{0,39})")
STRIP_RES = (
    DEBATE_RE, ROUNDS_RE, TURNS_RE, *JUDGE_RES, MENTION_RE,
    re.compile(r"\b(?:over|in|with|for)\s*$", re.IGNORECASE),
)
LEAD_FILLER = frozenset(
    "i want would like to a an the between and vs vs. versus on about over have let with please it out "
    "this that whether, ok so now then , : ; - —".split()
) - {"whether"}
RULES = "respond to the other side's specific points, concede when a point lands, demand evidence for every claim"
FINAL_FORMAT = "Final position: <your stance> — <one line why>"
VERDICT_FORMAT = "Verdict: <crow> — <why>"


def is_debate_order(text: str) -> bool:
    return bool(DEBATE_RE.search(text))


NEGATED_RE = re.compile(r"\b(?:don'?t|do\s+not|never|not|no\s+need\s+to)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)


def is_stop_order(text: str) -> bool:
    """ "Stop the debate", not "don't stop the debate yet"."""
    m = STOP_RE.search(text)
    return m is not None and not NEGATED_RE.search(text[: m.start()].replace("’", "'"))


def running_debate(nest: Nest, *, lock: bool = False) -> Debate | None:
    rows = Debate.objects.filter(nest=nest, status=Debate.Status.RUNNING)
    if lock:
        rows = rows.select_for_update()
    return rows.order_by("-id").first()


def debate_record(debate: Debate) -> dict[str, Any]:
    return {
        "debate_id": debate.debate_id,
        "nest_id": debate.nest.nest_id,
        "question": debate.question,
        "moderator": debate.moderator,
        "crows": list(debate.crows),
        "stances": dict(debate.stances),
        "judge": debate.judge,
        "rounds": debate.rounds,
        "turn_order": debate.turn_order,
        "round": debate.round,
        "phase": debate.phase,
        "status": debate.status,
        "cued": debate.cued,
        "turns": list(debate.turns),
        "finals": dict(debate.finals),
        "verdict": debate.verdict,
        "winner": debate.winner,
        "asked_msg_id": debate.asked_msg_id,
        "kickoff_msg_id": debate.kickoff_msg_id,
        "verdict_msg_id": debate.verdict_msg_id,
        "started_at": rfc3339(debate.started_at),
        "finished_at": rfc3339(debate.finished_at) if debate.finished_at else None,
    }


# --- reading the owner's order -----------------------------------------------------------


def _member(name: str, members: list[str]) -> str:
    by_lower = {m.lower(): m for m in members}
    return by_lower.get(name.lower().lstrip("@"), "")


def _can_speak(name: str) -> bool:
    crow = Crow.objects.filter(name=name).first()
    return crow is not None and crow.status == Crow.Status.ACTIVE and crow.role not in (
        Crow.Role.SENTRY, Crow.Role.ELDER, Crow.Role.CHIEF_OF_STAFF,
    )


def _question(text: str, nest: Nest, trigger: NestMessage, *, names: list[str]) -> str:
    words = text
    for pattern in STRIP_RES:
        words = pattern.sub(" ", words)
    for name in filter(None, names):
        words = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])[,:]?", " ", words, flags=re.IGNORECASE)
    # What is left of "I want a debate between X and Y on ...", "let X and Y argue it out:"
    # once the order and the names are gone: filler words before the question itself.
    tokens = words.split()
    while tokens and tokens[0].lower().strip(",:;.-—") in LEAD_FILLER:
        tokens.pop(0)
    words = " ".join(tokens)
    # "… @Inky and @Soot argue, Rook judges": the order's verb, left at a clause's end.
    words = re.sub(r"(?:\band\s+)?\b(?:argue|debate|discuss)\s*(?=[,:;.]|$)", " ", words, flags=re.IGNORECASE)
    words = re.sub(r"\b(?:and|vs\.?|versus)\s*(?=[,:.]|$)", " ", words)
    words = " ".join(words.replace(" ,", ",").split()).strip(" ,:;.-—")
    if len(words.split()) >= 3:
        return words
    earlier = (
        NestMessage.objects.filter(nest=nest, author=OWNER, n__lt=trigger.n).order_by("-n").values_list("text", flat=True)
    )
    for said in earlier[:5]:
        if not is_debate_order(said):
            return " ".join(MENTION_RE.sub("", said).split())
    return ""


OPTIONS_RE = re.compile(
    r"(?P<a>[\w.+#-]+)\s+(?:or|vs\.?|versus)\s+(?P<b>[\w.+#-]+(?:\s+[\w.+#-]+){0,2}?)\s*(?:[?.!,;]|$)",
    re.IGNORECASE,
)


# "tea or coffee for the team?": the options are one word each, and the words after the
# second say what it is for.
SHORT_OPTIONS_RE = re.compile(r"(?P<a>[\w.+#-]+)\s+(?:or|vs\.?|versus)\s+(?P<b>[\w.+#-]+)\b", re.IGNORECASE)


def _stances(question: str, count: int) -> list[str]:
    """"X or Y" gives each side an option; otherwise for and against the proposition."""
    m = OPTIONS_RE.search(question) or SHORT_OPTIONS_RE.search(question)
    if m and m.group("b").lower() == "not":  # "now or not" is for and against
        m = None
    if m:
        base = [f"for {m.group('a')}", f"for {m.group('b')}"]
    else:
        base = ["for", "against"]
    return [base[i % len(base)] for i in range(count)]


def _plan(trigger: NestMessage) -> tuple[dict[str, Any] | None, str]:
    """The debate the owner asked for, or (None, why not)."""
    nest = trigger.nest
    members = queries.crow_members(nest)
    text = trigger.text
    judge = ""
    for pattern in JUDGE_RES:
        m = pattern.search(text)
        if m and _member(m.group("name"), members) and _can_speak(_member(m.group("name"), members)):
            judge = _member(m.group("name"), members)
            break
    named = []
    # The crows named, @-mentioned or not, in the order the owner wrote them.
    spots = []
    for member in members:
        m = re.search(rf"(?<![\w-])@?{re.escape(member)}(?![\w-])", text, re.IGNORECASE)
        if m:
            spots.append((m.start(), member))
    for _, member in sorted(spots):
        if member != judge and member not in named and _can_speak(member):
            named.append(member)
    if len(named) < 2:
        for name in nest.core or []:
            if len(named) >= 2:
                break
            if name in members and name != judge and name not in named and _can_speak(name):
                named.append(name)
    if len(named) < 2:
        return None, "a debate needs two crows in this room who can speak; name them, e.g. “@Hugin and @Munin, debate this: …”"
    first = FIRST_RE.search(text)
    turn_order = bool(TURNS_RE.search(text))
    if first:
        lead = _member(first.group("name") or first.group("name2") or "", named)
        if lead:
            named.remove(lead)
            named.insert(0, lead)
            turn_order = True
    if not judge:
        spare = [c for c in (nest.core or []) if c in members and c not in named and _can_speak(c)]
        quill = queries.quill()
        judge = spare[0] if spare else (quill.name if quill is not None and quill.name not in named else "")
    if not judge:
        return None, "a debate needs a judge besides the debaters; name one, e.g. “Pepper judges”"
    rounds_m = ROUNDS_RE.search(text)
    rounds = settings.CROWS_DEBATE_ROUNDS
    if rounds_m:
        word = rounds_m.group(1).lower()
        rounds = ROUND_WORDS.get(word) or int(word)
    if not 1 <= rounds <= MAX_ROUNDS:
        return None, f"a debate runs 1–{MAX_ROUNDS} rounds, not {rounds}"
    question = _question(text, nest, trigger, names=[*members, judge])
    if not question:
        return None, "what should they debate? Say “debate this: <the question>”"
    stances = dict(zip(named, _stances(question, len(named)), strict=True))
    return {
        "crows": named, "judge": judge, "rounds": rounds, "turn_order": turn_order,
        "question": question[:500], "stances": stances,
    }, ""


# --- posting as the moderator ------------------------------------------------------------


def _say(debate: Debate, text: str, *, to: str = "", refers_to: str = "", invocation: Invocation | None = None) -> NestMessage:
    from nests.actions.messages import post_message

    return post_message(
        debate.nest.nest_id, author=debate.moderator, text=text, kind="say", to=to or None,
        refers_to=refers_to or None, tagged_by="header", invocation=invocation,
    )


def _order(debate: Debate, round_n: int) -> list[str]:
    crows = list(debate.crows)
    if debate.turn_order or not crows:
        return crows
    shift = (round_n - 1) % len(crows)
    return crows[shift:] + crows[:shift]


def _speakers(debate: Debate) -> list[str]:
    """Who speaks in the current phase, in order."""
    if debate.phase == Debate.Phase.ARGUING:
        return _order(debate, debate.round)
    if debate.phase == Debate.Phase.FINAL:
        return list(debate.crows)
    if debate.phase == Debate.Phase.JUDGING:
        return [debate.judge]
    return []


def _cue(debate: Debate, crow: str, text: str, refers_to: str) -> NestMessage:
    """Boss cues `crow`: the cue invokes it (dispatch reads `cue_msg_id`) and opens its
    turn's expectation."""
    from nests.actions.chat.expectations import open_expectation

    debate.cued = crow
    debate.cue_msg_id = ""
    debate.save(update_fields=["cued", "cue_msg_id"])
    # The cue's id is known only once it is stored, and dispatch runs inside the post:
    # it recognises the cue by `cued` plus the moderator's cue prefix.
    cue = _say(debate, text, to=crow, refers_to=refers_to)
    debate.cue_msg_id = cue.msg_id
    debate.save(update_fields=["cue_msg_id"])
    turns: dict[str, str] = {
        Debate.Phase.ARGUING: f"argue round {debate.round} ({debate.stances.get(crow, '')})",
        Debate.Phase.FINAL: "post a final position",
        Debate.Phase.JUDGING: "make the judge's call",
    }
    what = turns.get(debate.phase, "speak")
    open_expectation(
        cue, crow=crow, check=Expectation.Check.TURN_ORDER, debate=debate,
        expected=f"{crow}'s turn in {debate.debate_id}: {what}",
    )
    return cue




def _round_open(debate: Debate, refers_to: str) -> NestMessage:
    order = _order(debate, debate.round)
    emit(
        "debate.round",
        {"nest_id": debate.nest.nest_id, "debate_id": debate.debate_id, "round": debate.round,
         "rounds": debate.rounds, "status": "open", "speakers": order, "turns": []},
    )
    first = order[0]
    then = ", then ".join(f"@{c}" for c in order[1:])
    return _cue(
        debate, first,
        f"Round {debate.round} of {debate.rounds} ({debate.debate_id}) is open. "
        f"@{first} ({debate.stances[first]}), you speak first" + (f"; then {then}." if then else "."),
        refers_to,
    )


def start_debate(inv: Invocation, boss: Crow) -> NestMessage | str:
    """Boss reads the owner's order and starts the debate: the kickoff (returned, as
    Boss's reply to the order) and round 1's first cue. A str is Boss's refusal."""
    from nests.actions.chat.claims import mark_answered

    trigger = inv.trigger
    with transaction.atomic():
        lock_event_log()
        nest = Nest.objects.select_for_update().get(pk=trigger.nest_id)
        current = running_debate(nest)
        if current is not None:
            return f"One debate at a time: {current.debate_id} on “{current.question}” is still running."
        plan, why = _plan(trigger)
        if plan is None:
            return why
        debate = Debate.objects.create(
            debate_id=f"new-{trigger.pk}", nest=nest, question=plan["question"], moderator=boss.name,
            crows=plan["crows"], stances=plan["stances"], judge=plan["judge"], rounds=plan["rounds"],
            turn_order=plan["turn_order"], asked_msg_id=trigger.msg_id,
        )
        debate.debate_id = f"debate-{debate.pk}"
        debate.save(update_fields=["debate_id"])
        stances = "; ".join(f"@{c} argues {s}" for c, s in plan["stances"].items())
        order = ", then ".join(plan["crows"])
        kickoff = _say(
            debate,
            f"Debate {debate.debate_id}, on the owner's word. Question: “{plan['question']}”. Stances: {stances}. "
            f"Judge: @{plan['judge']}. Rules: {RULES}. Rounds: {plan['rounds']}, one turn each per round, "
            + ("in this order every round: " + order + ". " if plan["turn_order"] else f"openers alternate (round 1: {order}). ")
            + f"I cue each speaker; anyone speaking out of turn is nudged, not counted. "
            f"Final positions in the format “{FINAL_FORMAT}”; the judge closes with “{VERDICT_FORMAT}”.",
            to=OWNER, refers_to=trigger.msg_id, invocation=inv,
        )
        debate.kickoff_msg_id = kickoff.msg_id
        debate.round = 1
        debate.save(update_fields=["kickoff_msg_id", "round"])
        emit("debate.started", debate_record(debate))
        from nests.actions.chat.expectations import open_expectation

        turns = len(plan["crows"]) * (plan["rounds"] + 1) + 1
        open_expectation(
            kickoff, crow=boss.name, check=Expectation.Check.ROUNDS_COMPLETED, debate=debate,
            expected=f"{debate.debate_id} runs {plan['rounds']} rounds, final positions and the judge's call",
            due_at=timezone.now() + (turns + 1) * _due_period(),
        )
        mark_answered(trigger)
        _round_open(debate, kickoff.msg_id)
    return kickoff


def _due_period() -> Any:
    from datetime import timedelta

    return timedelta(seconds=max(settings.CROWS_EXPECTATION_DUE_S, 1))


# --- dispatch's and post_message's hooks -------------------------------------------------


def cued_decision(message: NestMessage) -> str:
    """The crow a moderator's cue invokes, or "". A moderator is a crow (Boss), so the
    owner's and the harness's messages, most of a room's, skip the debate's lookup."""
    if message.author in (OWNER, *HARNESS_AUTHORS):
        return ""
    debate = running_debate(message.nest)
    if debate is None or message.author != debate.moderator or not debate.cued or debate.cue_msg_id:
        return ""
    return debate.cued


def _close_turn(debate: Debate, crow: str, by: NestMessage, *, status: str = Expectation.Status.MET) -> None:
    from nests.actions.chat.expectations import close_expectation

    for exp in Expectation.objects.select_for_update().filter(
        debate=debate, crow=crow, status__in=Expectation.LIVE, check_name=Expectation.Check.TURN_ORDER
    ):
        close_expectation(exp, status=status, by_msg_id=by.msg_id, reason=f"{crow} spoke in turn")


def _winner(debate: Debate, text: str) -> str:
    lowered = text.lower()
    hits = [(lowered.find(c.lower()), c) for c in debate.crows if c.lower() in lowered]
    return min(hits)[1] if hits else ""


def _advance(debate: Debate, message: NestMessage) -> None:
    """The cued crow spoke: record the turn and cue the next speaker, open the next round,
    ask for final positions, call the judge, or close the debate."""
    crow = message.author
    _close_turn(debate, crow, message)
    text = message.text[:1000]
    if debate.phase == Debate.Phase.ARGUING:
        debate.turns = [*debate.turns, {"round": debate.round, "crow": crow, "stance": debate.stances.get(crow, ""),
                                        "msg_id": message.msg_id, "text": text}]
    elif debate.phase == Debate.Phase.FINAL:
        debate.turns = [*debate.turns, {"round": 0, "crow": crow, "stance": debate.stances.get(crow, ""),
                                        "msg_id": message.msg_id, "text": text}]
        debate.finals = {**debate.finals, crow: text}
    speakers = _speakers(debate)
    spoken = speakers.index(crow) + 1 if crow in speakers else len(speakers)
    debate.cued, debate.cue_msg_id = "", ""
    debate.save()
    if spoken < len(speakers) and debate.phase != Debate.Phase.JUDGING:
        nxt = speakers[spoken]
        label = f"round {debate.round}" if debate.phase == Debate.Phase.ARGUING else "final positions"
        extra = f" Format: “{FINAL_FORMAT}”." if debate.phase == Debate.Phase.FINAL else ""
        _cue(debate, nxt, f"@{nxt} ({debate.stances[nxt]}), your turn, {label}.{extra}", message.msg_id)
        return
    if debate.phase == Debate.Phase.ARGUING:
        emit(
            "debate.round",
            {"nest_id": debate.nest.nest_id, "debate_id": debate.debate_id, "round": debate.round,
             "rounds": debate.rounds, "status": "completed", "speakers": speakers,
             "turns": [t for t in debate.turns if t["round"] == debate.round]},
        )
        if debate.round < debate.rounds:
            debate.round += 1
            debate.save(update_fields=["round"])
            _round_open(debate, message.msg_id)
            return
        debate.phase = Debate.Phase.FINAL
        debate.save(update_fields=["phase"])
        first = debate.crows[0]
        _cue(
            debate, first,
            f"All {debate.rounds} rounds are done. Final positions, one each, in the format "
            f"“{FINAL_FORMAT}”. @{first} ({debate.stances[first]}), your turn.",
            message.msg_id,
        )
        return
    if debate.phase == Debate.Phase.FINAL:
        debate.phase = Debate.Phase.JUDGING
        debate.save(update_fields=["phase"])
        positions = "; ".join(f"{c}: {debate.stances[c]}" for c in debate.crows)
        _cue(
            debate, debate.judge,
            f"@{debate.judge}, your call as judge ({positions}). Weigh the final positions and answer "
            f"“{VERDICT_FORMAT}”.",
            message.msg_id,
        )
        return
    _finish(debate, message)


def _finish(debate: Debate, verdict: NestMessage) -> None:
    from nests.actions.chat.expectations import close_expectation

    debate.verdict = verdict.text[:1000]
    debate.verdict_msg_id = verdict.msg_id
    debate.winner = _winner(debate, verdict.text)
    debate.phase = Debate.Phase.DONE
    debate.status = Debate.Status.FINISHED
    debate.finished_at = timezone.now()
    debate.save()
    for exp in Expectation.objects.select_for_update().filter(debate=debate, status__in=Expectation.LIVE):
        close_expectation(exp, status=Expectation.Status.MET, by_msg_id=verdict.msg_id, reason=f"{debate.debate_id} finished")
    emit("debate.finished", _finished_payload(debate))
    won = f" The call goes to @{debate.winner}." if debate.winner else ""
    _say(debate, f"Debate {debate.debate_id} is closed: {debate.rounds} rounds, both final positions in, and the "
         f"judge has ruled.{won} Thanks, all.", refers_to=verdict.msg_id)


def _finished_payload(debate: Debate, **extra: str) -> dict[str, Any]:
    return {
        "nest_id": debate.nest.nest_id, "debate_id": debate.debate_id, "question": debate.question,
        "rounds": debate.rounds, "judge": debate.judge, "verdict": debate.verdict, "winner": debate.winner,
        "finals": dict(debate.finals), "verdict_msg_id": debate.verdict_msg_id, "turns": len(debate.turns),
        "status": debate.status, **extra,
    }


def stop_debate(
    debate: Debate,
    *,
    why: str,
    by: str,
    refers_to: str = "",
    invocation: Invocation | None = None,
    grounded: str = "",
    blame: bool = False,
) -> NestMessage:
    """End a running debate early (locked by the caller, inside its transaction): every
    turn still owed is closed as met, since nobody owes it anything now, except the turn
    of `grounded` (the crow that can no longer speak) when `blame` (it was quarantined),
    escalated to the owner; emits
    `debate.finished` with status `stopped`, and the moderator (or the harness, when the
    moderator is the one grounded) tells the room. Lock the room, then the debate (the
    order a post takes them in)."""
    from nests.actions.chat.expectations import close_expectation

    debate.status = Debate.Status.STOPPED
    debate.phase = Debate.Phase.DONE
    debate.cued, debate.cue_msg_id = "", ""
    debate.finished_at = timezone.now()
    debate.save()
    for exp in Expectation.objects.select_for_update().filter(debate=debate, status__in=Expectation.LIVE):
        # Only a quarantined crow's owed turn goes to the owner as not kept; a crow retired
        # or taken out of the room by the owner did nothing wrong, nor did the others.
        blamed = exp.crow == grounded and blame
        status = Expectation.Status.ESCALATED if blamed else Expectation.Status.MET
        close_expectation(exp, status=status, reason=f"{debate.debate_id} stopped: {why}"[:300])
    emit("debate.finished", _finished_payload(debate, reason=why, by=by))
    turns = len(debate.turns)
    moderating = grounded != debate.moderator and _can_moderate(debate.moderator)
    text = (
        f"Debate {debate.debate_id} is stopped after {turns} turn{'s' if turns != 1 else ''}: {why}. "
        f"Nobody owes it anything more; ask {'me' if moderating else '@' + debate.moderator} for a new "
        "debate whenever you like."
    )
    if moderating:
        return _say(debate, text, to=OWNER, refers_to=refers_to or debate.kickoff_msg_id, invocation=invocation)
    from nests.actions.messages import post_message

    return post_message(
        debate.nest.nest_id, author=HARNESS, text=text, kind="say", to=OWNER,
        refers_to=refers_to or debate.kickoff_msg_id, tagged_by="header",
    )


def _can_moderate(name: str) -> bool:
    crow = Crow.objects.filter(name=name).first()
    return crow is not None and crow.status == Crow.Status.ACTIVE


def stop_on_owners_word(inv: Invocation, boss: Crow) -> NestMessage | str:
    """The owner told Boss to stop the room's debate. A str is Boss's answer when there
    is none to stop."""
    from nests.actions.chat.claims import mark_answered

    with transaction.atomic():
        lock_event_log()
        # The room, then the debate: the order a post takes them in (store_message, after_post).
        Nest.objects.select_for_update().get(pk=inv.nest_id)
        debate = running_debate(inv.nest, lock=True)
        if debate is None:
            return "No debate is running in this room."
        mark_answered(inv.trigger)
        return stop_debate(
            debate, why="the owner stopped it", by=OWNER, refers_to=inv.trigger.msg_id, invocation=inv,
        )


QUARANTINED = "was quarantined"


def _taking_part(crow: str, nest: Nest | None = None) -> list[tuple[int, int]]:
    """(debate pk, room pk) of every running debate `crow` takes part in (in `nest`)."""
    rows = Debate.objects.filter(status=Debate.Status.RUNNING)
    if nest is not None:
        rows = rows.filter(nest=nest)
    return [(d.pk, d.nest_id) for d in rows.order_by("id") if crow in (*d.crows, d.judge, d.moderator)]


def lock_debate_rooms(crow: str) -> None:
    """Before a crow is grounded (flock.actions.before_crow_grounded): lock the rooms of the
    debates it takes part in, in id order, ahead of the crow's row, as a post in the room
    takes them; stop_for_grounded finds them held."""
    rooms = {nest_pk for _, nest_pk in _taking_part(crow)}
    if rooms:
        list(Nest.objects.select_for_update().filter(pk__in=rooms).order_by("pk").values_list("pk", flat=True))


def stop_for_grounded(crow: str, why: str, *, nest: Nest | None = None) -> list[NestMessage]:
    """A crow can no longer speak (`why`: "was quarantined", "was retired", "left the
    room"): every running debate it takes part in (in `nest`, or anywhere) stops. Call
    inside the transaction that grounded it."""
    said = []
    for pk, nest_pk in _taking_part(crow, nest):
        # The room, then the debate, as a post takes them; still running once both are held?
        Nest.objects.select_for_update().get(pk=nest_pk)
        debate = Debate.objects.select_for_update().filter(pk=pk, status=Debate.Status.RUNNING).first()
        if debate is None:
            continue
        role = "the moderator" if crow == debate.moderator else "the judge" if crow == debate.judge else "a debater"
        said.append(stop_debate(
            debate, why=f"{crow}, {role}, {why}", by=HARNESS, grounded=crow, blame=why == QUARANTINED,
        ))
    return said


def _out_of_turn(debate: Debate, message: NestMessage) -> None:
    """Nudge a participant who spoke while another crow was cued; after three, the owner
    gets the summary instead."""
    from nests.actions.chat.expectations import (
        NUDGE_LIMIT,
        open_expectation,
        send_nudge,
        send_summary,
    )

    exp = (
        Expectation.objects.select_for_update()
        .filter(debate=debate, crow=message.author, check_name=Expectation.Check.TURN_ORDER, status__in=Expectation.LIVE)
        .exclude(message__msg_id=debate.cue_msg_id)
        .first()
    )
    cued = f"@{debate.cued}'s turn" if debate.cued else "nobody's turn yet"
    if exp is None:
        exp = open_expectation(
            message, crow=message.author, check=Expectation.Check.TURN_ORDER, debate=debate,
            expected=f"{message.author} spoke out of turn in {debate.debate_id} ({message.msg_id} is not counted; it was "
            f"{cued}): wait for the moderator's cue",
        )
    if exp.nudges >= NUDGE_LIMIT:
        send_summary(debate.nest, [exp], why=f"{message.author} kept speaking out of turn in {debate.debate_id}")
        return
    send_nudge(exp)


def _answers_turn_order_nudge(debate: Debate, invocation: Invocation | None) -> bool:
    """Whether the post is a crow's reply to a nudge for speaking out of turn (the nudge
    refers to the message that broke the turn order)."""
    if invocation is None or invocation.reason != "nudge":
        return False
    nudge = NestMessage.objects.filter(pk=invocation.trigger_id).values_list("refers_to", flat=True).first()
    return Expectation.objects.filter(
        debate=debate, crow=invocation.crow, check_name=Expectation.Check.TURN_ORDER, message__msg_id=nudge or ""
    ).exists()


def after_post(message: NestMessage, *, invocation: Invocation | None) -> None:
    """post_message's hook, inside its transaction: a cued crow's turn advances the debate;
    a participant speaking while another is cued is nudged."""
    if message.author in (OWNER, *HARNESS_AUTHORS) or message.kind in ("nudge", "flag"):
        return
    debate = running_debate(message.nest, lock=True)
    if debate is None or message.author == debate.moderator:
        return
    if message.author not in [*debate.crows, debate.judge]:
        return
    if message.author == debate.cued:
        if _answers_turn_order_nudge(debate, invocation):
            # A slow brain's answer to being nudged for speaking out of turn, arriving after
            # the moderator cued it: its turn is its answer to the cue, still to come.
            return
        if invocation is not None and invocation.reason not in ("debate", "nudge"):
            # Its answer to something else (the owner asked it a question mid-debate): an
            # answer to that, not its turn, which is its answer to the cue.
            return
        _advance(debate, message)
        return
    if invocation is not None and invocation.reason in ("nudge", "debate"):
        # The crow's answer to its nudge, or a cue it had already answered over the API:
        # not another breach of turn order.
        return
    _out_of_turn(debate, message)


def context_for(nest: Nest, crow: str) -> dict[str, Any] | None:
    """What a crow cued in a running debate is told: the question, its stance, the phase
    and what the others said (for brains; the mock argues from it)."""
    debate = running_debate(nest)
    if debate is None or crow != debate.cued:
        return None
    phase = {"arguing": "argue", "final": "final", "judging": "judge"}.get(debate.phase, "argue")
    return {
        "debate_id": debate.debate_id,
        "question": debate.question,
        "phase": phase,
        "round": debate.round,
        "rounds": debate.rounds,
        "stance": debate.stances.get(crow, ""),
        "stances": dict(debate.stances),
        "judge": debate.judge,
        "turns": [{k: t[k] for k in ("round", "crow", "stance", "text")} for t in debate.turns],
        "finals": dict(debate.finals),
        "final_format": FINAL_FORMAT,
        "verdict_format": VERDICT_FORMAT,
    }


def recue(inv: Invocation, boss: Crow) -> NestMessage | None:
    """Boss nudged about a stalled debate: it cues the current speaker again."""
    with transaction.atomic():
        lock_event_log()
        Nest.objects.select_for_update().get(pk=inv.nest_id)  # the room, then the debate
        debate = running_debate(inv.nest, lock=True)
        if debate is None or debate.moderator != boss.name or not debate.cued:
            return None
        # Cleared while the new cue is posted, so dispatch invokes the cued crow again.
        debate.cue_msg_id = ""
        debate.save(update_fields=["cue_msg_id"])
        cue = _say(
            debate, f"@{debate.cued}, we are waiting on you in {debate.debate_id}: your turn.",
            to=debate.cued, refers_to=debate.kickoff_msg_id, invocation=inv,
        )
        debate.cue_msg_id = cue.msg_id
        debate.save(update_fields=["cue_msg_id"])
        return cue
