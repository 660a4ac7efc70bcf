"""The mock brain: the flock's offline default, not a test stub.

It answers every task plausibly, in each crow's own voice, with no network and no model.
The same request always gets the same reply: every choice is drawn from a
``random.Random`` seeded with a hash of the whole request (never the global random
state), and so is the decision to fail when ``CROWS_MOCK_FAIL_RATE`` asks for failures.
Token counts are estimated at about 1.3 per word, as a real tokenizer roughly would.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from typing import Any

from flock.brains import mock_shapes
from flock.brains import mock_text as mt
from flock.brains.config import mock_config
from flock.brains.header import MSG_ID_RE, format_header, parse_header, strip_header
from flock.brains.mock_debate import debate_turn, recall
from flock.brains.mock_voice import Voice
from flock.brains.prompts import (
    describe_event,
    describe_part,
    estimate_tokens,
    prompt_tokens,
)
from flock.brains.types import BrainReply, BrainRequest

_MENTION_RE = re.compile(r"@([A-Za-z][\w-]*)")
_NUDGE_RE = re.compile(r"^\s*\[NUDGE (" + MSG_ID_RE.pattern + r")\]")
# A request for finding things out, which the offline brain cannot do: its delivery says
# it has no sources (docs/GOVERNANCE.md, 7), in words the Sentry reads as such.
_RESEARCH_RE = re.compile(
    r"\b(?:research|look\s+up|look\s+into|dig\s+up|retrieve|fetch|search|find\s+out|facts?|sources?|cite)\b",
    re.IGNORECASE,
)
UNSOURCED_NOTE = "Sources: none; the offline mock brain looks nothing up."


def request_digest(request: BrainRequest) -> bytes:
    """A stable 16-byte hash of everything in the request (stable across processes)."""
    p = request.persona
    canonical = json.dumps(
        [
            p.name,
            p.epithet,
            p.voice,
            p.strength,
            request.task,
            request.messages,
            request.max_tokens,
            request.context,
            request.system,
        ],
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return hashlib.blake2b(canonical.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class MockBrain:
    provider = "mock"

    def __init__(self, model: str = "mock") -> None:
        self.model = model or "mock"

    def think(self, request: BrainRequest) -> BrainReply:
        started = time.perf_counter()
        try:
            return self._think(request, started)
        except Exception as exc:  # noqa: BLE001 - the contract: errors are values, never exceptions
            return self._fail(
                started,
                tokens_in=0,
                error=f"mock brain: could not think ({type(exc).__name__}: {exc})",
            )

    def _fail(self, started: float, *, tokens_in: int, error: str) -> BrainReply:
        return BrainReply.failed(
            error,
            provider=self.provider,
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            tokens_in=tokens_in,
        )

    def _reply(self, started: float, **fields: Any) -> BrainReply:
        return BrainReply(
            provider=self.provider,
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            **fields,
        )

    def _think(self, request: BrainRequest, started: float) -> BrainReply:
        cfg = mock_config()
        digest = request_digest(request)
        tokens_in = prompt_tokens(request)
        if cfg.latency_ms > 0:
            time.sleep(cfg.latency_ms / 1000.0)
        if request.max_tokens <= 0:
            return self._fail(
                started,
                tokens_in=tokens_in,
                error=f"mock brain: max_tokens must be positive, got {request.max_tokens}",
            )
        # The first 8 bytes pick failure, the rest seed the wording, so raising the fail rate
        # fails a growing, stable set of requests without changing anyone's words.
        if cfg.fail_rate > 0 and int.from_bytes(digest[:8], "big") / 2**64 < cfg.fail_rate:
            return self._fail(
                started,
                tokens_in=tokens_in,
                error=f"mock brain: simulated failure (CROWS_MOCK_FAIL_RATE={cfg.fail_rate:g} "
                "picked this call)",
            )
        writer = _Writer(request, random.Random(int.from_bytes(digest[8:], "big")))
        compose = _TASKS.get(request.task)
        if compose is None:
            return self._fail(
                started,
                tokens_in=tokens_in,
                error=f"mock brain: unknown task {request.task!r}",
            )
        text = compose(writer)
        if request.task == "triage":
            # Triage JSON is short and is never cut: a cut would make it unparseable.
            tokens_out = min(estimate_tokens(text), request.max_tokens)
        else:
            text = _fit(text, request.max_tokens)
            tokens_out = estimate_tokens(text)
        return self._reply(started, ok=True, text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _fit(text: str, max_tokens: int) -> str:
    """Cut ``text`` to at most ``max_tokens`` estimated tokens, keeping lines and the header."""
    budget = max(1, math.floor(max_tokens / 1.3))
    if len(text.split()) <= budget:
        return text
    kept: list[str] = []
    left = budget
    for line in text.split("\n"):
        tokens = line.split()
        if not tokens:
            kept.append("")
            continue
        if len(tokens) <= left:
            kept.append(line)
            left -= len(tokens)
            continue
        if left > 0:
            kept.append(" ".join(tokens[:left]).rstrip(".,;:") + "…")
        break
    return "\n".join(kept).strip()


class _Writer:
    """Composes one reply for one request, in the persona's voice."""

    def __init__(self, request: BrainRequest, rng: random.Random) -> None:
        self.request = request
        self.ctx: dict[str, Any] = request.context or {}
        self.persona = request.persona
        self.rng = rng
        self.voice = Voice(request.persona, rng)

    # What the task is about: the item, else the subtask, else the last thing said.
    def item_text(self) -> str:
        for key in ("item_text", "subtask", "request_text", "text"):
            value = self.ctx.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        last = self.last_user_text()
        return last or "the task at hand"

    def last_user_text(self) -> str:
        for message in reversed(self.request.messages or []):
            if isinstance(message, dict) and message.get("role") != "assistant":
                content = message.get("content")
                if isinstance(content, str) and content.strip():
                    return content.strip()
        return ""

    def triage(self) -> str:
        item = self.item_text()
        mode, task_type, subtasks, judged = mt.triage(item)
        goal = mt.shorten(mt.goal_of(item), 12)
        if mode == "split":
            n = len(subtasks)
            named = ", ".join(mt.shorten(s, 5) for s in subtasks)
            reason = self.rng.choice(
                (
                    (
                        f"Split: {_count_word(n)} separate jobs in one line ({named}), so I'm "
                        f"splitting it {_count_word(n)} ways."
                    ),
                    f"Split: this is really {_count_word(n)} jobs ({named}); one crow each, and the Elder merges.",
                )
            )
        elif mode == "murder":
            reason = self.rng.choice(
                (
                    (
                        f"Murder: a judgment call ('{judged}'), so two or three crows should weigh in on "
                        "their own before the Elder sums up."
                    ),
                    f"Murder: there's no single right answer here ('{judged}'); independent views first, then a verdict.",
                )
            )
        else:
            reason = self.rng.choice(
                (
                    f"Solo: one clear {task_type} job, '{goal}'. One crow can take it.",
                    f"Solo: a single {task_type} task; no need to split '{goal}'.",
                )
            )
        return json.dumps(
            {"mode": mode, "task_type": task_type, "subtasks": subtasks, "reason": reason}, ensure_ascii=False
        )

    def answer(self) -> str:
        if self.request.task == "subtask" and self.ctx.get("subtask"):
            target = str(self.ctx["subtask"])
        else:
            target = self.item_text()
        shape = mock_shapes.shape_of(target)
        if shape:
            # The form the task asks for, finished (a haiku, a tweet, a code fix...), not a
            # plan for it: the page badges it as the offline mock's placeholder.
            return mock_shapes.compose(shape, target, self.rng)
        goal = mt.goal_of(target)
        task_type = str(self.ctx.get("task_type") or "")
        if task_type not in mt.STEP_TYPES:
            task_type = mt.task_type_of(goal)
        label = "Question" if target.rstrip().endswith("?") else "Goal"
        lines = [self.voice.opener(), f"{label}: {mt.capital(goal)}{'?' if label == 'Question' else '.'}"]
        if self.request.task == "subtask" and self.ctx.get("item_text"):
            lines.append(f"(My part of: {mt.shorten(mt.clean(str(self.ctx['item_text'])), 20)}.)")
        lines += [f"{i}. {step}" for i, step in enumerate(mt.steps_for(goal, task_type, self.rng), 1)]
        lines.append(self.voice.closer())
        return "\n".join(lines)

    def _parts(self) -> list[tuple[str, str]]:
        parts = []
        for crow, text in (describe_part(p) for p in self.ctx.get("parts") or []):
            body = mt.gist_of(strip_header(text))
            if body:
                parts.append((crow, body))
        return parts

    def merge(self) -> str:
        parts = self._parts()
        goal = mt.goal_of(self.item_text())
        if not parts:
            return "\n".join(
                [
                    self.voice.opener(),
                    f"Nothing came back for: {goal}. No parts to merge.",
                    self.voice.closer(),
                ]
            )
        crows = _join_names([c for c, _ in parts])
        lines = [self.voice.opener(), f"{mt.capital(goal)}: merged from {crows}."]
        lines += [f"{i}. From {crow}: {mt.shorten(text, 40)}" for i, (crow, text) in enumerate(parts, 1)]
        lines.append(self.voice.closer())
        return "\n".join(lines)

    def synthesise(self) -> str:
        parts = self._parts()
        goal = mt.goal_of(self.item_text())
        if not parts:
            return "\n".join([self.voice.opener(), f"No readings came back on: {goal}.", self.voice.closer()])
        names = [c for c, _ in parts]
        term_lists = [mt.key_terms(text, limit=30) for _, text in parts]
        term_sets = [set(terms) for terms in term_lists]
        common = (
            [t for t in term_lists[0] if all(t in other for other in term_sets[1:])] if len(parts) > 1 else []
        )
        lines = [
            self.voice.opener(),
            (
                f"{mt.capital(_count_word(len(parts)))} crows weighed in on '{mt.shorten(goal, 14)}': "
                f"{_join_names(names)}."
            ),
        ]
        lines += [f"- {crow}: {mt.shorten(text, 30)}" for crow, text in parts]
        if common:
            lines.append(f"Where they agree: {', '.join(common[:3])}.")
        else:
            lines.append("Where they agree: on the goal, if little else.")
        leanings = []
        for i, (crow, _) in enumerate(parts):
            others = set().union(*(t for j, t in enumerate(term_sets) if j != i))
            own = [t for t in term_lists[i] if t not in others]
            if own:
                leanings.append(f"{crow} leans on {own[0]}")
        if leanings:
            lines.append("Where they differ: " + "; ".join(leanings) + ".")
        pick = self.rng.choice(names)
        rest = [n for n in names if n != pick]
        caveat = f", with {self.rng.choice(rest)}'s caveat in mind" if rest else ""
        lines.append(f"My call: go with {pick}'s line{caveat}.")
        lines.append(self.voice.closer())
        return "\n".join(lines)

    def banter(self) -> str:
        listener = str(self.ctx.get("listener") or self.ctx.get("to") or "")
        relations = self.persona.relationships
        if not listener:
            listener = self.rng.choice(sorted(relations)) if relations else "flock"
        relation = relations.get(listener, "")
        events = [describe_event(e) for e in (self.ctx.get("recent_events") or [])]
        bits = [f"@{listener},"]
        # A crow does not speak of itself in the third person: it remarks on the newest
        # thing another crow did, or says "I".
        me = re.compile(rf"\b{re.escape(self.persona.name)}\b")
        others = [e for e in events if not me.search(e)]
        seen = others[-1] if others else me.sub("I", events[-1]) if events else ""
        if seen:
            bits.append(f"saw that {mt.shorten(seen, 14).rstrip('.')} —")
        bits.append(self.voice.banter(relation))
        line = " ".join(bits)
        return " ".join(line.split())

    def chat(self) -> str:
        debate = self.ctx.get("debate")
        if isinstance(debate, dict):
            return debate_turn(debate, name=self.persona.name, strength=self.persona.strength, rng=self.rng)
        expect = str(self.ctx.get("expect") or "")
        msg_id = str(self.ctx.get("msg_id") or "")
        requester = str(self.ctx.get("requester") or "owner").lstrip("@")
        last = self.last_user_text()
        nudged = _NUDGE_RE.match(last)
        if not msg_id and nudged:
            msg_id = nudged.group(1)
        if msg_id and not MSG_ID_RE.fullmatch(msg_id):
            msg_id = ""
        if expect not in ("claim", "deliver", "decline", "say", "answer"):
            expect, msg_id = self._decide(msg_id, last)
        # A header needs an id; without one the crow still speaks, as plain talk.
        if not msg_id and expect in ("claim", "deliver", "decline"):
            expect = "answer" if expect != "decline" else "say"
        request_text = self._request_text(self._request_for(msg_id) or last)
        gist = mt.shorten(mt.goal_of(request_text), 12) if request_text else "this"
        if expect == "claim":
            return f"{format_header('CLAIM', msg_id)} {self.voice.claim(requester, gist)}"
        if expect == "decline":
            reason = str(self.ctx.get("reason") or "") or (
                f"it sits outside what I do best ({self.voice.strength_phrase()}); "
                "a crow better suited should take it"
            )
            return f"{format_header('DECLINE', msg_id)} {self.voice.decline(requester, reason)}"
        recalled = recall(self.ctx.get("memory"), f"{request_text} {last}")
        if expect in ("deliver", "answer"):
            body = self._deliverable(request_text)
            if self.ctx.get("task_type") == "research" or _RESEARCH_RE.search(request_text):
                # It looked nothing up, and says so: a research delivery citing nothing
                # would be read as fabricated sources (docs/GOVERNANCE.md, 7).
                body = f"{body}\n{UNSOURCED_NOTE}"
            opening = f"@{requester}, delivered: {gist}."
            text = f"{opening}\n{recalled + chr(10) if recalled else ''}{body}"
            return f"{format_header('RESULT', msg_id)} {text}" if msg_id else text
        # say
        remark = f"{recalled} {self._remark(request_text)}" if recalled else self._remark(request_text)
        if msg_id:
            return f"{format_header('ACK', msg_id)} {self.voice.ack(requester)} {remark}"
        return f"{self.voice.opener()} {remark}"

    def _decide(self, msg_id: str, last: str) -> tuple[str, str]:
        """Claim a request addressed to me; deliver what I claimed; otherwise just talk."""
        claimed: list[tuple[int, str]] = []
        closed: set[str] = set()
        last_user_at = -1
        for at, message in enumerate(self.request.messages or []):
            if not isinstance(message, dict):
                continue
            if message.get("role") != "assistant":
                last_user_at = at
                continue
            header = parse_header(str(message.get("content") or ""))
            if header is None:
                continue
            if header.kind == "claim":
                claimed.append((at, header.refers_to))
            elif header.kind in ("deliver", "decline"):
                closed.add(header.refers_to)
        open_claims = [(at, c) for at, c in claimed if c not in closed]
        if msg_id:
            if msg_id in {c for _, c in open_claims}:
                return "deliver", msg_id
            if msg_id in closed:
                return "say", msg_id
            return ("claim" if self._addressed(last) else "say"), msg_id
        # No id given: my own claim since the last word from anyone else is due a delivery.
        if open_claims and open_claims[-1][0] > last_user_at:
            return "deliver", open_claims[-1][1]
        if self._addressed(last):
            return "claim", ""
        if open_claims:
            return "deliver", open_claims[-1][1]
        return "say", ""

    def _request_for(self, msg_id: str) -> str:
        """The words of the request I claimed as ``msg_id`` (the last thing said before my
        claim, nudges aside), so a delivery answers the request and not the nudge."""
        if not msg_id:
            return ""
        said = ""
        for message in self.request.messages or []:
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                continue
            content = message["content"].strip()
            if message.get("role") != "assistant":
                if content and not _NUDGE_RE.match(content):
                    said = content
                continue
            header = parse_header(content)
            if header is not None and header.kind == "claim" and header.refers_to == msg_id:
                return said
        return ""

    def _addressed(self, last: str) -> bool:
        name = self.persona.name.lower()
        if str(self.ctx.get("to") or "").lstrip("@").lower() == name:
            return True
        return name in {m.lower() for m in _MENTION_RE.findall(last)}

    def _request_text(self, last: str) -> str:
        text = str(self.ctx.get("request_text") or "") or last
        text = strip_header(text)
        text = re.sub(r"^\s*\[NUDGE [^\]]*\]\s*(\[nudge [^\]]*\]\s*)?", "", text)
        requester = str(self.ctx.get("requester") or "")
        for prefix in {requester, "owner"} - {""}:
            if text.lower().startswith(prefix.lower() + ":"):
                text = text[len(prefix) + 1 :]
        text = _MENTION_RE.sub("", text)
        text = re.sub(r"^[\s,:;—-]+", "", text)
        return " ".join(text.split())

    def _deliverable(self, request_text: str) -> str:
        shape = mock_shapes.shape_of(request_text)
        if shape:
            return mock_shapes.compose(shape, request_text, self.rng)
        goal = mt.goal_of(request_text) or "the request"
        task_type = mt.task_type_of(goal)
        steps = mt.steps_for(goal, task_type, self.rng)
        lines = [f"{i}. {s}" for i, s in enumerate(steps, 1)]
        lines.append(self.voice.closer())
        return "\n".join(lines)

    def _remark(self, request_text: str) -> str:
        if not request_text:
            return self.voice.closer()
        topic = mt.topic_of(request_text) or "that"
        return self.rng.choice(
            (
                f"Keeping an eye on {topic}.",
                f"Thinking about {topic}; more if you want it.",
                f"Good point on {topic}.",
            )
        )


def _count_word(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}.get(n, str(n))


def _join_names(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    if len(unique) <= 1:
        return unique[0] if unique else "nobody"
    return ", ".join(unique[:-1]) + " and " + unique[-1]


_TASKS = {
    "triage": _Writer.triage,
    "answer": _Writer.answer,
    "subtask": _Writer.answer,
    "merge": _Writer.merge,
    "synthesise": _Writer.synthesise,
    "synthesize": _Writer.synthesise,
    "banter": _Writer.banter,
    "chat": _Writer.chat,
}
