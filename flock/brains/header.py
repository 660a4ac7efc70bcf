"""A crow's structured header: the bracket grammar (docs/BRAINS.md) on a reply's first line.

docs/CHATROOM.md maps the bracket verbs to nest message kinds:

=========================  ========  ==========================================
first line                 kind      fields
=========================  ========  ==========================================
``[CLAIM <msg_id>] ...``   claim     ``refers_to`` = msg_id
``[RESULT <msg_id>] ...``  deliver   ``refers_to`` = msg_id
``[DECLINE <msg_id>] r``   decline   ``refers_to`` = msg_id, ``reason`` = r
``[ACK <msg_id>] ...``     say       ``refers_to`` = msg_id
``[NO-ACTION <msg_id>] r`` say       ``refers_to`` = msg_id, ``reason`` = r
``[REFER <name>] ...``     refer     ``refers_to`` = "", ``reason`` = name
=========================  ========  ==========================================

AGENT_PROTOCOL's acknowledgement form ``[ACK:<msg_id>]`` is read as ``[ACK <msg_id>]``, and
any header may name its sender right after the bracket, ``[from <sender>]`` (kept in
``sender`` and taken off the text with the bracket).

For the verbs that carry a msg_id, ``reason`` is the rest of the first line after the
bracket, trimmed (a decline's or no-action's reason; for the others, the opening words).
``[REFER <name>]`` names an artifact, not a message, so ``refers_to`` stays empty and the
name travels in ``reason``.

The parser is strict, because a wrong kind is worse than none (no header falls back to
Jev's tag or to ``say``): the header must open the first line (spaces or tabs before it
are allowed), the verb must be one of the six above in capitals, a msg_id must match
``[a-z0-9-]+-[0-9]+`` (a nest or list id, a dash, a number) and a REFER name is 1-200
characters with no whitespace or brackets. Anything else yields ``None``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MSG_ID_PATTERN = r"[a-z0-9-]+-[0-9]+"
MSG_ID_RE = re.compile(MSG_ID_PATTERN)
REFER_NAME_PATTERN = r"[^\s\[\]]{1,200}"

# Bracket verb -> nest message kind (docs/CHATROOM.md).
VERB_KINDS: dict[str, str] = {
    "CLAIM": "claim",
    "RESULT": "deliver",
    "DECLINE": "decline",
    "ACK": "say",
    "NO-ACTION": "say",
    "REFER": "refer",
}
MSG_ID_VERBS: tuple[str, ...] = ("CLAIM", "RESULT", "DECLINE", "ACK", "NO-ACTION")

# The words of a post that is only a header ("[CLAIM launch-1]" and nothing else, as the
# protocol's own examples have it): the reply footer's words for each verb. A crow's
# brain that leaves out a decline's reason gets them too; over the API that is a 400.
BARE_HEADER_WORDS: dict[str, str] = {
    "CLAIM": "Mine.",
    "RESULT": "Done.",
    "DECLINE": "Declining.",
    "ACK": "Seen.",
    "NO-ACTION": "No action needed.",
    "REFER": "See the artifact named above.",
}

# ASCII digits only: `\d` would also accept other scripts' digits, which no msg_id has.
# AGENT_PROTOCOL writes an acknowledgement `[ACK:<id>]` (the colon form, ACK only) and lets
# any header name its sender after it, `[from <sender>]`.
_FROM = r"(?:[ \t]*\[from ([A-Za-z0-9_-]{1,40})\])?"
_MSG_ID_HEADER_RE = re.compile(
    r"[ \t]*\[(?:(CLAIM|RESULT|DECLINE|ACK|NO-ACTION) |(ACK):)(" + MSG_ID_PATTERN + r")\]" + _FROM + r"(.*)",
    re.DOTALL,
)
_REFER_HEADER_RE = re.compile(r"[ \t]*\[REFER (" + REFER_NAME_PATTERN + r")\]" + _FROM + r"(.*)", re.DOTALL)

_FOOTER_TEMPLATE = (
    "Reply: [ACK {id}] seen | [CLAIM {id}] mine | [RESULT {id}] done | [DECLINE {id}] | [NO-ACTION {id}]."
)


@dataclass(frozen=True)
class Header:
    """A parsed header. ``kind`` is one of claim, deliver, decline, say, refer."""

    kind: str
    refers_to: str
    reason: str
    verb: str
    sender: str = ""  # the `[from <sender>]` after the bracket, if any


def _split_first_line(text: str) -> tuple[str, str | None]:
    """The first line (without a trailing CR) and the rest, or None when there is no newline."""
    first, newline, rest = text.partition("\n")
    return first.removesuffix("\r"), (rest if newline else None)


def _match(first_line: str) -> tuple[Header, str] | None:
    """The header on ``first_line`` and the text after its bracket, or None."""
    m = _MSG_ID_HEADER_RE.fullmatch(first_line)
    if m is not None:
        verb, msg_id, sender, after = m.group(1) or m.group(2), m.group(3), m.group(4) or "", m.group(5)
        header = Header(kind=VERB_KINDS[verb], refers_to=msg_id, reason=after.strip(), verb=verb, sender=sender)
        return header, after
    m = _REFER_HEADER_RE.fullmatch(first_line)
    if m is not None:
        name, sender, after = m.group(1), m.group(2) or "", m.group(3)
        return Header(kind="refer", refers_to="", reason=name, verb="REFER", sender=sender), after
    return None


def parse_header(text: str) -> Header | None:
    """The structured header on the first line of ``text``, or None. Never raises."""
    if not isinstance(text, str):
        return None
    first_line, _ = _split_first_line(text)
    found = _match(first_line)
    return found[0] if found else None


def strip_header(text: str) -> str:
    """``text`` without its header bracket; unchanged when there is no valid header.

    The rest of the first line is kept (trimmed); if nothing is left on it, the first line
    goes. For ``[REFER <name>]`` the name stays in the text ("name: rest"), because a nest
    message has no field for an artifact name and a refer without it points nowhere.
    """
    if not isinstance(text, str):
        return text
    first_line, rest = _split_first_line(text)
    found = _match(first_line)
    if found is None:
        return text
    header, after = found
    head = after.strip()
    if header.verb == "REFER":
        head = f"{header.reason}: {head}" if head else header.reason
    if rest is None:
        return head
    return f"{head}\n{rest}" if head else rest


# The protocol requires a reason after these (`[DECLINE {job_id}] {reason}`; docs/CHATROOM.md).
REASON_REQUIRED = ("DECLINE", "NO-ACTION")


def missing_reason(text: str, header: Header) -> bool:
    """Whether `text` is a DECLINE or NO-ACTION header with no reason after it."""
    return header.verb in REASON_REQUIRED and not strip_header(text).strip()


def header_body(text: str, header: Header) -> str:
    """``text`` without its header, trimmed; a bare header's words when nothing is left."""
    return strip_header(text).strip() or BARE_HEADER_WORDS[header.verb]


def format_header(verb: str, target: str, reason: str = "") -> str:
    """Build a header line: ``format_header("DECLINE", "todo-3", "busy")``.

    Raises ValueError for an unknown verb or a target the parser would not accept, so a
    brain can never emit a header that does not parse back to itself.
    """
    if verb not in VERB_KINDS:
        raise ValueError(f"unknown header verb {verb!r}")
    pattern = REFER_NAME_PATTERN if verb == "REFER" else MSG_ID_PATTERN
    if not re.fullmatch(pattern, target):
        raise ValueError(f"{target!r} is not a valid {'name' if verb == 'REFER' else 'msg_id'} for {verb}")
    line = f"[{verb} {target}]"
    reason = " ".join(reason.split())
    return f"{line} {reason}" if reason else line


def contract_footer(msg_id: str) -> str:
    """The bracket grammar's contract footer (docs/BRAINS.md) for ``msg_id``, appended to prompts that want a reply."""
    return _FOOTER_TEMPLATE.format(id=msg_id)


# --- ask_owner: a decision a crow brings the owner (docs/GOVERNANCE.md, "1. Quill brings decisions") ---
#
# [ASK_OWNER <id>] <question> A: <option> | B: <option> [| C: …] | recommend <letter> because <reason>
#
# Not a message kind (the spec's ask_owner is an owner decision), so parse_header leaves
# it alone: the post is stored as written, and Quill opens the decision it asks for.
ASK_OWNER_RE = re.compile(r"[ \t]*\[ASK_OWNER ([A-Za-z0-9_.:-]{1,60})\](.*)", re.DOTALL)
_OPTION_RE = re.compile(r"(?:^|\|)\s*([A-E])\s*:\s*([^|]+)")
_RECOMMEND_RE = re.compile(r"\|\s*recommend\s+([A-E])\s+because\s+(.+)$", re.IGNORECASE | re.DOTALL)
ASK_OWNER_GRAMMAR = "[ASK_OWNER <id>] <question> A: <option> | B: <option> | recommend A because <reason>"
ASK_OPTIONS_MAX = 5
ASK_OPTION_MAX = 100


@dataclass(frozen=True)
class AskOwner:
    """A crow's ask: `options` as "A: …", "B: …"; `recommended` is one of their letters.
    `problem` is set (and the rest may be empty) when the header is there but the ask is
    not one the owner can answer."""

    ask_id: str
    question: str = ""
    options: tuple[str, ...] = ()
    recommended: str = ""
    reason: str = ""
    problem: str = ""


def parse_ask_owner(text: str) -> AskOwner | None:
    """The ask on the first line of `text` (the rest of the text may carry it on), or None
    when the text does not open with `[ASK_OWNER <id>]`. Never raises."""
    if not isinstance(text, str):
        return None
    m = ASK_OWNER_RE.match(text)
    if m is None:
        return None
    ask_id, rest = m.group(1), " ".join(m.group(2).split())
    recommend = _RECOMMEND_RE.search(rest)
    if recommend is None:
        return AskOwner(ask_id, problem="it recommends nothing (end with “| recommend A because …”)")
    body = rest[: recommend.start()]
    first = re.search(r"(?:^|\s)A\s*:", body)
    if first is None:
        return AskOwner(ask_id, problem="it offers no options (“A: … | B: …”)")
    question = body[: first.start()].strip()
    found = [(letter, words.strip()) for letter, words in _OPTION_RE.findall(body[first.start():].strip())]
    letters = [letter for letter, _ in found]
    if len(found) < 2 or letters != list("ABCDE"[: len(found)]):
        return AskOwner(ask_id, problem="its options are not A, B (and C, D, E) in order, at least two")
    if len(found) > ASK_OPTIONS_MAX or any(not words or len(words) > ASK_OPTION_MAX for _, words in found):
        return AskOwner(ask_id, problem=f"an option is empty or over {ASK_OPTION_MAX} characters")
    recommended = recommend.group(1).upper()
    if recommended not in letters:
        return AskOwner(ask_id, problem=f"it recommends {recommended}, which is not one of its options")
    return AskOwner(
        ask_id,
        question=question,
        options=tuple(f"{letter}: {words}" for letter, words in found),
        recommended=recommended,
        reason=recommend.group(2).strip(),
    )
