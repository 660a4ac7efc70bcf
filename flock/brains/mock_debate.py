"""The mock brain in a debate (docs/GOVERNANCE.md): coherent turns from the context the
moderator's cue carries (`context["debate"]`): round 1 states the case for the crow's
stance in terms of the question and the crow's strength; later rounds quote the other
side's latest point and answer it (conceding a small point now and then); the final
position follows the format; the judge weighs both final positions and names a winner.
Deterministic: every choice comes from the writer's seeded random."""

from __future__ import annotations

import random
import re
from typing import Any

from flock.brains import mock_text as mt

_SCRUB = re.compile(r"[@#\[\]]|\b[a-z0-9][a-z0-9-]*-\d+\b")


def _quote(text: str, words: int = 14) -> str:
    """The point another crow made (its argument, not the round label or its quote of
    someone else), safe to repeat: no @mentions, #rooms, headers or msg ids."""
    body = text.strip()
    if "— " in body:
        body = body.split("— ", 1)[1]
    body = re.sub(r"^(?:Round \d+[^:]*:|Final position:)\s*", "", body, flags=re.IGNORECASE)
    body = re.split(r"(?<=[.!?])\s", body, maxsplit=1)[0]
    body = _SCRUB.sub("", body)
    return mt.shorten(" ".join(body.split()), words).strip(" .,;:")


def _lens(strength: str) -> str:
    """The crow's strength in a few words: 'data and records: tables, ...' -> 'data and records'."""
    head = re.split(r"[:;,(]", strength, maxsplit=1)[0].strip()
    return mt.shorten(head, 4).rstrip("…") if head else "the evidence"


def _terms(question: str) -> str:
    """What the question is about, as a phrase of its own words: 'Should the crow tracker
    use Postgres or SQLite?' -> 'the crow tracker'; 'Should we use Postgres or SQLite for
    the crow tracker?' -> 'the crow tracker'; else its first content words."""
    q = " ".join(question.split()).rstrip(" ?.!")
    tail = re.search(r"\b(?:for|in|on)\s+((?:the|our|a|an|this|my)\s+[\w\s'-]{2,40})$", q, re.IGNORECASE)
    if tail:
        return tail.group(1).strip()
    head = re.match(
        r"(?:should|shall|do|does|is|are|can|will|would)\s+(.+?)\s+(?:use|pick|choose|adopt|go with|switch to|move to|be|get)\b",
        q, re.IGNORECASE,
    )
    if head and head.group(1).lower() not in ("we", "i", "you", "they"):
        return head.group(1).strip()
    terms = mt.key_terms(question, limit=2)
    return " ".join(terms) if terms else "the question"


def debate_turn(debate: dict[str, Any], *, name: str, strength: str, rng: random.Random) -> str:
    phase = str(debate.get("phase") or "argue")
    question = str(debate.get("question") or "the question")
    stance = str(debate.get("stance") or "my side")
    terms = _terms(question)
    lens = _lens(strength)
    turns = [t for t in debate.get("turns") or [] if isinstance(t, dict)]
    others = [t for t in turns if t.get("crow") != name]
    if phase == "judge":
        return _verdict(debate, rng)
    if phase == "final":
        mine = [t for t in turns if t.get("crow") == name]
        held = "I held it every round" if mine else "it stands on its own"
        why = rng.choice(
            (
                f"on {terms}, the strongest evidence still points this way, and {held}",
                f"the other side never answered the cost of {terms}",
                f"seen through {lens}, {terms} settles it",
            )
        )
        return f"Final position: {stance} — {why}."
    round_n = int(debate.get("round") or 1)
    if not others:
        case = rng.choice(
            (
                f"looking at {terms} through {lens}, the balance favours this side: the risks are known and the gain is concrete",
                f"{terms} is where this is decided, and the record there backs this stance",
                f"the burden of proof sits with the other side on {terms}; until they bring numbers, this stance holds",
            )
        )
        return f"Round {round_n}, {stance}: {case}. Evidence first, please, if you disagree."
    last = others[-1]
    point = _quote(str(last.get("text") or ""))
    answers = (
        f"that skips {terms}, which is where the real cost sits",
        f"show the evidence; without it, {terms} still favours {stance}",
        f"a fair worry, but {lens} says it is manageable",
        f"that is an assertion, not a number; on {terms} the record says otherwise",
    )
    # Each turn answers differently from the crow's last one, so rounds move on.
    answer = answers[(round_n + len(turns) + rng.randrange(2)) % len(answers)]
    concede = (round_n + len(turns)) % 3 == 0
    concession = f" I concede one thing: {('timing matters', 'the risk is real', 'it is not free')[round_n % 3]}." if concede else ""
    return f"Round {round_n}, {stance}. {last.get('crow')} says “{point}” — {answer}.{concession}"


def _verdict(debate: dict[str, Any], rng: random.Random) -> str:
    finals = {str(k): str(v) for k, v in (debate.get("finals") or {}).items()}
    stances = {str(k): str(v) for k, v in (debate.get("stances") or {}).items()}
    crows = list(finals) or list(stances)
    if not crows:
        return "Verdict: no contest — nobody gave a final position."
    winner = rng.choice(crows)
    losers = [c for c in crows if c != winner]
    because = _quote(finals.get(winner, ""), 12) or "the clearer case"
    other = f"; {losers[0]}'s case ({stances.get(losers[0], '')}) was sound but thinner on evidence" if losers else ""
    return f"Verdict: {winner} — {stances.get(winner, '')} wins on “{because}”{other}."


PRIVATE_OVERLAP = 2  # content words a private memory must share with the question


def recall(memory: Any, about: str) -> str:
    """The mock's use of its memory across rooms: the most relevant item that shares a
    content word with what it is asked, quoted with the room it came from, or "".

    The owner's words in a direct chat are private ("repeat only if it helps here"): the
    mock, which cannot judge that, repeats one only when it shares at least two content
    words with what it is asked, not one word in passing."""
    if not isinstance(memory, list) or not about.strip():
        return ""
    wanted = _content_words(about)
    for item in memory:
        if not isinstance(item, dict):
            continue
        text = str(item.get("text") or "")
        shared = wanted & _content_words(text)
        if len(shared) < (PRIVATE_OVERLAP if item.get("private") else 1):
            continue
        quote = mt.shorten(" ".join(re.sub(r"[@#\[\]]", "", text).split()), 30)
        room = str(item.get("room") or "another room")
        who = "the owner told me" if item.get("author") == "owner" else (
            "I said" if item.get("role") != "told" else f"{item.get('author')} told me"
        )
        return f"From {room}, I remember {who}: “{quote}”"
    return ""


def _content_words(text: str) -> set[str]:
    return {w.strip(".-'") for w in mt.words(text) if len(w.strip(".-'")) > 3 and w not in mt.STOP}
