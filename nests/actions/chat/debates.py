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
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import timezone

from flock.events import emit
from flock.models import Crow
from flock.vocab import HARNESS, HARNESS_AUTHORS, HARNESS_KINDS, OWNER
from nests import queries
from nests.actions.chat.effects import NOTHING, Effects, Expect, Posted, Say
from nests.actions.chat.ledger import close_expectation, nudge, open_expectation, summary
from nests.models import Debate, Expectation, Invocation, Nest, NestMessage
from nests.payloads import DebateFinished, DebateRound
from nests.queries_ledger import (
    DEBATE_RE,
    FINAL_FORMAT,
    NUDGE_LIMIT,
    VERDICT_FORMAT,
    is_debate_order,
    running_debate,
)

MAX_ROUNDS = 5
ROUNDS_RE = re.compile(r"\b(\d|one|two|three|four|five)\s+rounds?\b", re.IGNORECASE)
ROUND_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
JUDGE_RES = (
    re.compile(r"\bjudge(?:d)?\s*(?::|by|is|=)?\s*@?(?P<name>[A-Za-z][\w-]{0,39})", re.IGNORECASE),
    re.compile(r"@?(?P<name>[A-Za-z][\w-]{0,39})\s+(?:judges|judging|will\s+judge|as\s+(?:the\s+)?judge|can\s+judge)\b", re.IGNORECASE),
)
FIRST_RE = re.compile(r"@?(?P<name>[A-Za-z][\w-]{0,39})\s+(?:goes|speaks|opens)\s+first|@?(?P<name2>[A-Za-z][\w-]{0,39})\s+first\b", re.IGNORECASE)
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


def plan_debate(trigger: NestMessage) -> tuple[dict[str, Any] | None, str]:
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


# --- saying as the moderator -----------------------------------------------------------


def moderator_says(
    debate: Debate, text: str, *, to: str = "", refers_to: str = "", invocation: Invocation | None = None,
    opens: list[Expect] | None = None, then: Callable[[NestMessage], None] | None = None,
) -> Say:
    return Say(
        author=debate.moderator, text=text, to=to, refers_to=refers_to, nest=debate.nest, invocation=invocation,
        opens=opens or [], then=then,
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


def _cue(debate: Debate, crow: str, text: str, refers_to: str) -> Say:
    """Boss cues `crow`: the cue invokes it (dispatch knows a cue by `cued` set and no
    `cue_msg_id` yet), opens its turn's expectation, and is then kept as the cue."""
    debate.cued = crow
    debate.cue_msg_id = ""
    debate.save(update_fields=["cued", "cue_msg_id"])
    turns: dict[str, str] = {
        Debate.Phase.ARGUING: f"argue round {debate.round} ({debate.stances.get(crow, '')})",
        Debate.Phase.FINAL: "post a final position",
        Debate.Phase.JUDGING: "make the judge's call",
    }
    what = turns.get(debate.phase, "speak")

    def kept(cue: NestMessage) -> None:
        debate.cue_msg_id = cue.msg_id
        debate.save(update_fields=["cue_msg_id"])

    return moderator_says(
        debate, text, to=crow, refers_to=refers_to, then=kept,
        opens=[Expect(crow=crow, check=Expectation.Check.TURN_ORDER, debate=debate,
                      expected=f"{crow}'s turn in {debate.debate_id}: {what}")],
    )


def round_open(debate: Debate, refers_to: str) -> Say:
    order = _order(debate, debate.round)
    emit(
        "debate.round",
        DebateRound(nest_id=debate.nest.nest_id, debate_id=debate.debate_id, round=debate.round,
                    rounds=debate.rounds, status="open", speakers=order, turns=[]),
    )
    first = order[0]
    then = ", then ".join(f"@{c}" for c in order[1:])
    return _cue(
        debate, first,
        f"Round {debate.round} of {debate.rounds} ({debate.debate_id}) is open. "
        f"@{first} ({debate.stances[first]}), you speak first" + (f"; then {then}." if then else "."),
        refers_to,
    )


# --- dispatch's and post_message's hooks -------------------------------------------------


def _close_turn(debate: Debate, crow: str, by: NestMessage, *, status: str = Expectation.Status.MET) -> None:
    for exp in Expectation.objects.select_for_update().filter(
        debate=debate, crow=crow, status__in=Expectation.LIVE, check_name=Expectation.Check.TURN_ORDER
    ):
        close_expectation(exp, status=status, by_msg_id=by.msg_id, reason=f"{crow} spoke in turn")


def _winner(debate: Debate, text: str) -> str:
    lowered = text.lower()
    hits = [(lowered.find(c.lower()), c) for c in debate.crows if c.lower() in lowered]
    return min(hits)[1] if hits else ""


def _advance(debate: Debate, message: NestMessage) -> Say:
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
        return _cue(debate, nxt, f"@{nxt} ({debate.stances[nxt]}), your turn, {label}.{extra}", message.msg_id)
    if debate.phase == Debate.Phase.ARGUING:
        emit(
            "debate.round",
            DebateRound(nest_id=debate.nest.nest_id, debate_id=debate.debate_id, round=debate.round,
                        rounds=debate.rounds, status="completed", speakers=speakers,
                        turns=[t for t in debate.turns if t["round"] == debate.round]),
        )
        if debate.round < debate.rounds:
            debate.round += 1
            debate.save(update_fields=["round"])
            return round_open(debate, message.msg_id)
        debate.phase = Debate.Phase.FINAL
        debate.save(update_fields=["phase"])
        first = debate.crows[0]
        return _cue(
            debate, first,
            f"All {debate.rounds} rounds are done. Final positions, one each, in the format "
            f"“{FINAL_FORMAT}”. @{first} ({debate.stances[first]}), your turn.",
            message.msg_id,
        )
    if debate.phase == Debate.Phase.FINAL:
        debate.phase = Debate.Phase.JUDGING
        debate.save(update_fields=["phase"])
        positions = "; ".join(f"{c}: {debate.stances[c]}" for c in debate.crows)
        return _cue(
            debate, debate.judge,
            f"@{debate.judge}, your call as judge ({positions}). Weigh the final positions and answer "
            f"“{VERDICT_FORMAT}”.",
            message.msg_id,
        )
    return _finish(debate, message)


def _finish(debate: Debate, verdict: NestMessage) -> Say:
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
    return moderator_says(
        debate, f"Debate {debate.debate_id} is closed: {debate.rounds} rounds, both final positions in, and the "
        f"judge has ruled.{won} Thanks, all.", refers_to=verdict.msg_id,
    )


def _finished_payload(debate: Debate, *, stopped: tuple[str, str] | None = None) -> DebateFinished:
    """`debate.finished`; `stopped` is (why, by) for a debate stopped early."""
    payload = DebateFinished(
        nest_id=debate.nest.nest_id, debate_id=debate.debate_id, question=debate.question,
        rounds=debate.rounds, judge=debate.judge, verdict=debate.verdict, winner=debate.winner,
        finals=dict(debate.finals), verdict_msg_id=debate.verdict_msg_id, turns=len(debate.turns),
        status=debate.status,
    )
    if stopped is not None:
        payload["reason"], payload["by"] = stopped
    return payload


def stop_debate(
    debate: Debate,
    *,
    why: str,
    by: str,
    refers_to: str = "",
    invocation: Invocation | None = None,
    grounded: str = "",
    blame: bool = False,
) -> Say:
    """End a running debate early (locked by the caller, inside its transaction): every
    turn still owed is closed as met, since nobody owes it anything now, except the turn
    of `grounded` (the crow that can no longer speak) when `blame` (it was quarantined),
    escalated to the owner; emits
    `debate.finished` with status `stopped`, and the moderator (or the harness, when the
    moderator is the one grounded) tells the room. Lock the room, then the debate (the
    order a post takes them in). Returns what is said of it, for the caller to say."""
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
    emit("debate.finished", _finished_payload(debate, stopped=(why, by)))
    turns = len(debate.turns)
    moderating = grounded != debate.moderator and _can_moderate(debate.moderator)
    text = (
        f"Debate {debate.debate_id} is stopped after {turns} turn{'s' if turns != 1 else ''}: {why}. "
        f"Nobody owes it anything more; ask {'me' if moderating else '@' + debate.moderator} for a new "
        "debate whenever you like."
    )
    if moderating:
        return moderator_says(debate, text, to=OWNER, refers_to=refers_to or debate.kickoff_msg_id, invocation=invocation)
    return Say(author=HARNESS, text=text, to=OWNER, refers_to=refers_to or debate.kickoff_msg_id, nest=debate.nest)


def _can_moderate(name: str) -> bool:
    crow = Crow.objects.filter(name=name).first()
    return crow is not None and crow.status == Crow.Status.ACTIVE


QUARANTINED = "was quarantined"


def taking_part(crow: str, nest: Nest | None = None) -> list[tuple[int, int]]:
    """(debate pk, room pk) of every running debate `crow` takes part in (in `nest`)."""
    rows = Debate.objects.filter(status=Debate.Status.RUNNING)
    if nest is not None:
        rows = rows.filter(nest=nest)
    return [(d.pk, d.nest_id) for d in rows.order_by("id") if crow in (*d.crows, d.judge, d.moderator)]


def lock_debate_rooms(crow: str) -> None:
    """Before a crow is grounded (flock.actions.before_crow_grounded): lock the rooms of the
    debates it takes part in, in id order, ahead of the crow's row, as a post in the room
    takes them; stop_for_grounded finds them held."""
    rooms = {nest_pk for _, nest_pk in taking_part(crow)}
    if rooms:
        list(Nest.objects.select_for_update().filter(pk__in=rooms).order_by("pk").values_list("pk", flat=True))


def _out_of_turn(debate: Debate, message: NestMessage) -> Say:
    """Nudge a participant who spoke while another crow was cued; after three, the owner
    gets the summary instead."""
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
        return summary(debate.nest, [exp], why=f"{message.author} kept speaking out of turn in {debate.debate_id}")
    return nudge(exp)


def _answers_turn_order_nudge(debate: Debate, invocation: Invocation | None) -> bool:
    """Whether the post is a crow's reply to a nudge for speaking out of turn (the nudge
    refers to the message that broke the turn order)."""
    if invocation is None or invocation.reason != "nudge":
        return False
    nudge = NestMessage.objects.filter(pk=invocation.trigger_id).values_list("refers_to", flat=True).first()
    return Expectation.objects.filter(
        debate=debate, crow=invocation.crow, check_name=Expectation.Check.TURN_ORDER, message__msg_id=nudge or ""
    ).exists()


def react(posted: Posted) -> Effects:
    """A cued crow's turn advances the debate (the next cue, or the close); a participant
    speaking while another is cued is nudged."""
    message, invocation = posted.message, posted.invocation
    if message.author in (OWNER, *HARNESS_AUTHORS) or message.kind in HARNESS_KINDS:
        return NOTHING
    debate = running_debate(message.nest, lock=True)
    if debate is None or message.author == debate.moderator:
        return NOTHING
    if message.author not in [*debate.crows, debate.judge]:
        return NOTHING
    if message.author == debate.cued:
        if _answers_turn_order_nudge(debate, invocation):
            # A slow brain's answer to being nudged for speaking out of turn, arriving after
            # the moderator cued it: its turn is its answer to the cue, still to come.
            return NOTHING
        if invocation is not None and invocation.reason not in ("debate", "nudge"):
            # Its answer to something else (the owner asked it a question mid-debate): an
            # answer to that, not its turn, which is its answer to the cue.
            return NOTHING
        return Effects(say=[_advance(debate, message)])
    if invocation is not None and invocation.reason in ("nudge", "debate"):
        # The crow's answer to its nudge, or a cue it had already answered over the API:
        # not another breach of turn order.
        return NOTHING
    return Effects(say=[_out_of_turn(debate, message)])
