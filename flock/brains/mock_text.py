"""Reading a todo item the way the mock brain does: parts, judgment calls, task types, steps.

Pure string work, shared by the mock's triage and its answers. Everything here is
deterministic; the only choice point (which phrasing) takes an explicit ``random.Random``.
"""

from __future__ import annotations

import random
import re


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


WORD_RE = re.compile(r"[a-z0-9][a-z0-9'+#.-]*")
_TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+#.-]*")

# Keywords per task type; the type with the most hits wins, ties in this order.
TASK_KEYWORDS: dict[str, frozenset[str]] = {
    "code": _wordset(
        "code coding coded fix fixes fixed fixing bug bugs buggy test tests testing debug debugging "
        "script scripts function functions refactor deploy api endpoint python javascript sql regex "
        "crash crashes error errors compile build unit lint"
    ),
    "research": _wordset(
        "research researching find finding compare comparing comparison investigate investigating "
        "look lookup sources source evidence learn facts fact-check options alternatives review "
        "reviews"
    ),
    "planning": _wordset(
        "plan plans planning planned schedule schedules scheduling organise organize organising "
        "organizing roadmap agenda calendar book booking itinerary prioritise prioritize priorities "
        "timeline trip meeting meetings checklist steps"
    ),
    "data": _wordset(
        "data dataset datasets csv numbers spreadsheet spreadsheets excel table tables chart charts "
        "stats statistics average averages sum totals analyse analyze analysis figures metrics"
    ),
    "writing": _wordset(
        "write writing draft drafts drafting post posts posting blog email emails letter letters copy "
        "essay article tweet announcement newsletter rewrite edit editing summary summarise summarize "
        "bio speech caption slogan story"
    ),
}
TYPE_ORDER: tuple[str, ...] = ("code", "research", "planning", "data", "writing")

JUDGMENT_WORDS: frozenset[str] = _wordset(
    "should which compare comparing decide deciding vs vs. versus choose choosing whether best"
)
_JUDGMENT_OPENERS: frozenset[str] = _wordset("should which compare decide choose whether")

# Words a todo part usually starts with. A list of parts that mostly start with one of
# these is several jobs; "buy milk, eggs and bread" (one verb, a list of things) is one.
VERBS: frozenset[str] = _wordset(
    "fix write draft plan find research compare make build create send email post schedule "
    "organise organize book update review check summarise summarize decide choose analyse analyze "
    "clean add remove test debug prepare buy call sort set get tidy refactor deploy investigate "
    "list outline design rewrite edit translate explain pick name brainstorm estimate count chart "
    "track publish reply ask water pay text ring collect return cancel renew order print sign "
    "file submit pack move wash cook feed walk visit meet invite follow install upgrade migrate "
    "rename archive delete share upload download record film practise practice study read watch "
    "finish start ship launch announce tweet sketch hire interview train fill confirm remind take "
    "bring drop clear back look map merge split run load import export reconcile total graph plot "
    "proofread polish shorten use"
)
_POLITE = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+|(?:can|could|would|will)\s+(?:you|someone|somebody)\s+(?:please\s+)?"
    r"|i\s+(?:need|want)\s+(?:you\s+)?to\s+|we\s+need\s+to\s+|let'?s\s+|help\s+me\s+)",
    re.IGNORECASE,
)
STOP: frozenset[str] = _wordset(
    "the a an and or but of for to in on at by with from into about this that these those it its "
    "our your my their we you i me us them is are was were be been being do does did have has had "
    "will would can could should shall may might must not no yes so as if then than too very just "
    "also some any all each every more most less few other such own same new next last first one "
    "two three which what who whom whose when where why how there here up out over under again "
    "please given vs vs. versus"
)
# Words that end a noun phrase: 'the login bug | on Safari', 'a script | that dedupes ...'.
_BREAKS: frozenset[str] = _wordset(
    "on for in at with to from by about that which who so because before after until when where "
    "while into using via"
)
_TRAILING = ".!?;:, \t"


def words(text: str) -> list[str]:
    return WORD_RE.findall(text.lower())


def clean(text: str) -> str:
    """Whitespace collapsed, trailing punctuation gone."""
    return " ".join(text.split()).rstrip(_TRAILING)


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def goal_of(text: str) -> str:
    """The item as a goal: 'Can you fix the login bug?' -> 'fix the login bug'."""
    goal = clean(text)
    for _ in range(2):
        goal = _POLITE.sub("", goal)
    return goal or clean(text)


def object_of(goal: str) -> str:
    """The goal without its leading verb: 'fix the login bug' -> 'the login bug'."""
    head, _, rest = goal.partition(" ")
    if head.lower() in VERBS and rest.strip():
        return rest.strip()
    return goal


def phrases(goal: str) -> tuple[str, str, str]:
    """(object, core, detail) of a goal, in its own words and case.

    'fix the login bug on Safari' -> ('the login bug on Safari', 'the login bug', 'Safari');
    the detail is the last one or two content words after the core, else the core itself.
    """
    obj = object_of(goal)
    tokens = obj.split()
    cut = next((i for i, t in enumerate(tokens) if i > 0 and t.lower() in _BREAKS), len(tokens))
    core = " ".join(tokens[:cut]).rstrip(_TRAILING) or obj
    tail = [t.strip(_TRAILING + "()\"'") for t in tokens[cut:]]
    content = [t for t in tail if t and t.lower() not in STOP and t.lower() not in _BREAKS]
    detail = " ".join(content[-2:]) if content else core
    return obj, core, detail


def key_terms(text: str, limit: int = 4) -> list[str]:
    """Content words of ``text`` in order of appearance, lowercased, without repeats."""
    seen: list[str] = []
    for w in words(text):
        w = w.strip(".-'")
        if len(w) > 3 and w not in STOP and w not in VERBS and w not in seen:
            seen.append(w)
        if len(seen) >= limit:
            break
    return seen


def topic_of(text: str) -> str:
    """The last one or two content words of ``text`` in their own case: 'nice weather'."""
    tokens = [t.strip(_TRAILING) for t in _TOKEN_RE.findall(text)]
    content = [t for t in tokens if len(t) > 2 and t.lower() not in STOP and t.lower() not in VERBS]
    return " ".join(content[-2:]) if content else ""


def task_type_of(text: str) -> str:
    tokens = words(text)
    scores = {t: sum(1 for w in tokens if w.strip(".") in TASK_KEYWORDS[t]) for t in TYPE_ORDER}
    best = max(scores.values())
    if best == 0:
        return "chat"
    return next(t for t in TYPE_ORDER if scores[t] == best)


def judgment_word(text: str) -> str:
    """The first judgment-call word in ``text`` ('should', 'vs', ...), or ''."""
    for w in words(text):
        if w in JUDGMENT_WORDS:
            return w.rstrip(".")
    return ""


def options_of(text: str) -> tuple[str, str] | None:
    """The two options of a choice: 'Postgres or SQLite', 'tabs vs spaces'."""
    m = re.search(r"([A-Za-z0-9][\w.+#-]*)\s+(?:or|vs\.?|versus|against)\s+([A-Za-z0-9][\w.+#-]*)", text)
    if not m:
        return None
    a, b = m.group(1).rstrip(_TRAILING), m.group(2).rstrip(_TRAILING)
    if a.lower() in STOP or b.lower() in STOP:
        return None
    return a, b


def _strip_joiner(part: str) -> str:
    part = clean(part).lstrip(" -*")
    for joiner in ("and then ", "and ", "or ", "then ", "also ", "plus "):
        if part.lower().startswith(joiner):
            return part[len(joiner) :].strip()
    return part


def _split_and(part: str) -> list[str]:
    """Split 'email the list and book the venue' when each side is a phrase of 2+ words."""
    pieces = [_strip_joiner(p) for p in re.split(r"\s+(?:and then|and|then|&)\s+", part)]
    if len(pieces) > 1 and all(len(p.split()) >= 2 for p in pieces):
        return pieces
    return [part]


def _starts_with_verb(part: str) -> bool:
    first = (words(part) or [""])[0]
    return first in VERBS


def split_parts(text: str, *, limit: int = 4) -> list[str]:
    """The item's separate parts, in its own words; [] when it is one job.

    A colon list ("Launch: a, b, c") splits after the colon; then semicolons, then commas,
    then "and" between phrases. Every part must be a phrase of at least two words and all
    but one must start with a verb, so "buy milk, eggs and bread" stays one job. More than
    ``limit`` parts fold into the last.
    """
    body = clean(text)
    lead, colon, after = body.partition(":")
    listed = bool(colon and re.search(r"[;,]|\sand\s", after) and len(lead.split()) <= 8)
    if listed:
        body = after
    if ";" in body:
        raw = body.split(";")
    elif "," in body:
        raw = body.split(",")
    else:
        raw = [body]
    parts: list[str] = []
    for chunk in raw:
        chunk = _strip_joiner(chunk)
        if chunk:
            parts.extend(_split_and(chunk))
    parts = [p for p in (clean(p) for p in parts) if p]
    if (
        listed
        and len(parts) >= 2
        and _starts_with_verb(clean(lead))
        and all(len(p.split()) <= 3 for p in parts)
        # Nouns after the colon: "blog post, tweet, email" (a lone "tweet" or "email" reads
        # as a verb too, so only a longer phrase that starts with one is a verb phrase).
        and not any(_starts_with_verb(p) and len(p.split()) >= 2 for p in parts)
    ):
        # "plan the offsite: venue, agenda, budget": the lead is the job, each noun a part.
        parts = [f"{clean(lead)}: {p}" for p in parts]
        return parts[: limit - 1] + ["; ".join(parts[limit - 1 :])] if len(parts) > limit else parts
    if len(parts) < 2 or any(len(p.split()) < 2 for p in parts):
        return []
    if sum(1 for p in parts if _starts_with_verb(p)) < max(2, len(parts) - 1):
        return []
    if len(parts) > limit:
        parts = parts[: limit - 1] + ["; ".join(parts[limit - 1 :])]
    return parts


def triage(text: str) -> tuple[str, str, list[str], str]:
    """(mode, task_type, subtasks, judgment word) for an item."""
    task_type = task_type_of(text)
    parts = split_parts(text)
    judged = judgment_word(text)
    first = (words(text) or [""])[0]
    asks = judged and (first in _JUDGMENT_OPENERS or text.rstrip().endswith("?"))
    if judged and (asks or not parts):
        return "murder", task_type, [], judged
    if parts:
        return "split", task_type, parts, judged
    return "solo", task_type, [], judged


# Steps per task type: {obj} is the goal's object, {core} its head noun phrase and
# {detail} the words that qualify it ('the login bug' / 'Safari').
_STEPS: dict[str, tuple[str, ...]] = {
    "code": (
        "Reproduce {obj} reliably and write down the exact steps.",
        "Write a failing test that captures {core}.",
        "Make the smallest change that turns that test green.",
        "Run the whole suite so nothing around {detail} regresses.",
    ),
    "writing": (
        "Pin down the audience and the one point for {obj}.",
        "Write a short first draft that puts {detail} up front.",
        "Cut anything that does not serve that one point.",
        "Read it aloud once, then send it.",
    ),
    "research": (
        "Pin the question: what exactly do we need to know about {obj}?",
        "Gather two or three solid sources on {core}, primary ones first.",
        "Note where they agree and where they clash on {detail}.",
        "Write a short summary with a confidence level and what is still unknown.",
    ),
    "planning": (
        "List every piece of {obj}, however small.",
        "Put dates against {core} and anything that blocks it.",
        "Name one owner per piece.",
        "Check it against the calendar and leave some slack around {detail}.",
    ),
    "data": (
        "Load the data for {obj} and check its shape: rows, columns, blanks.",
        "Clean {core}: units, duplicates, missing values.",
        "Compute the figures that answer the question about {detail}.",
        "Show the result as a small table with one sentence of reading.",
    ),
    "chat": (
        "Start with what matters most about {obj}.",
        "Say it plainly, with {detail} up front.",
        "Add the one detail that makes {core} useful.",
        "Finish with a clear next step.",
    ),
}
_CHOICE_STEPS: tuple[str, ...] = (
    "Name what matters most here: {criteria}.",
    "Score {a} and {b} against each of those, honestly.",
    "Pick the one that fails least badly, and write down what would change the call.",
    "Decide, then set a date to revisit it.",
)
_CRITERIA: dict[str, str] = {
    "code": "effort, risk and what the team already knows",
    "research": "evidence, cost and how sure we can be",
    "planning": "time, cost and who it depends on",
    "data": "accuracy, effort and what the numbers must answer",
    "writing": "audience, tone and length",
    "chat": "cost, effort and risk",
}
_PART_HOW: dict[str, str] = {
    "code": "reproduce, fix, add a test",
    "writing": "one short draft, then a hard cut",
    "research": "two or three solid sources, then a summary",
    "planning": "dates, one owner, some slack",
    "data": "check the shape, then the figures",
    "chat": "a plain answer",
}
STEP_TYPES: frozenset[str] = frozenset(_STEPS)


def steps_for(goal: str, task_type: str, rng: random.Random) -> list[str]:
    """2-4 concrete steps built from the goal's own words."""
    if task_type not in _STEPS:
        task_type = task_type_of(goal)
    parts = split_parts(goal)
    if parts:
        return [f"{capital(p)}: {_PART_HOW[task_type_of(p)]}." for p in parts]
    count = rng.choice((3, 4))
    options = options_of(goal) if judgment_word(goal) else None
    if options:
        a, b = options
        return [s.format(a=a, b=b, criteria=_CRITERIA[task_type]) for s in _CHOICE_STEPS[:count]]
    obj, core, detail = phrases(goal)
    templates = _STEPS[task_type]
    # Keep the templates' order: steps are a sequence, not a shuffle.
    chosen = sorted(rng.sample(range(len(templates)), count))
    return [templates[i].format(obj=obj, core=core, detail=detail) for i in chosen]


def shorten(text: str, max_words: int) -> str:
    tokens = text.split()
    if len(tokens) <= max_words:
        return " ".join(tokens)
    return " ".join(tokens[:max_words]).rstrip(_TRAILING) + "…"


def gist_of(text: str) -> str:
    """The substance of a crow's answer: no opener/closer lines, no 'Goal:' restatement."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 2 and len(lines[0].split()) <= 6:
        lines = lines[1:]
    if len(lines) > 2 and len(lines[-1].split()) <= 6:
        lines = lines[:-1]
    body = [line for line in lines if not line.startswith(("Goal:", "Question:", "(My part of"))] or lines
    return " ".join(" ".join(body).split())
