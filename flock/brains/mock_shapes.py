"""The shape of a finished answer, for the mock brain (docs/BRAINS.md, "The offline mock").

An owner trying the product offline should see what a finished answer looks like, not a
plan for one: a haiku comes back as three short lines, a tweet fits in 280 characters, a
tagline is one line, a code fix is a fenced code block, a list is a list and a summary is
one paragraph. Every one is built from the request's own words; the page still badges it
as the offline mock's placeholder. `shape_of` finds the form a request asks for (or
None: the mock then answers with its usual steps), `compose` writes it. Deterministic:
every choice comes from the caller's seeded random.
"""

from __future__ import annotations

import random
import re

from flock.brains import mock_text as mt

TWEET_MAX = 280

# The forms, most specific first: "a tweet listing three ideas" is a tweet.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("haiku", re.compile(r"\bhaikus?\b", re.I)),
    ("tweet", re.compile(r"\b(?:tweets?|toots?|x post)\b", re.I)),
    ("tagline", re.compile(r"\b(?:taglines?|slogans?|straplines?|mottos?|catchphrase)\b", re.I)),
    ("code", re.compile(
        r"\b(?:fix|debug|patch|refactor|write|implement)\b.*\b(?:function|code|script|method|class|exception|"
        r"traceback|regex|query|python|javascript|typescript|sql)\b", re.I)),
    ("summary", re.compile(r"\b(?:summari[sz]e|summary|tl;?dr|recap|gist|overview)\b", re.I)),
    ("list", re.compile(
        r"^(?:list|name|give me|suggest|brainstorm)\b|\b(?:ideas|tips|facts|reasons|ways|names|options|"
        r"suggestions|checklist|examples|steps|questions)\b", re.I)),
)

_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_SHAPE_WORDS = re.compile(
    r"\b(?:write|draft|compose|make|create|give|me|us|a|an|the|short|quick|catchy|punchy|haikus?|tweets?|"
    r"taglines?|slogans?|mottos?|summary|summari[sz]e|list|of|some|\d+|" + "|".join(_COUNTS) + r")\b",
    re.I,
)


def shape_of(text: str) -> str | None:
    """The form `text` asks for: haiku, tweet, tagline, code, summary or list; None for
    anything else (a plan, a question, a chat)."""
    for shape, pattern in _SHAPES:
        if pattern.search(text):
            return shape
    return None


def topic_of(text: str) -> str:
    """What the piece is about, in the request's words: 'Write a haiku about autumn rain'
    -> 'autumn rain'; with no 'about', the request without its form words."""
    goal = mt.goal_of(text)
    lead, colon, _part = goal.partition(":")
    if colon and len(lead.split()) <= 8:
        # A part of a bigger job ("plan a launch: tweet"): the job's object is the topic.
        goal = mt.object_of(lead)
    about = re.search(r"\b(?:about|on|for|of|regarding|describing)\s+(.+)$", goal, re.I)
    if about:
        topic = about.group(1)
    else:
        topic = _SHAPE_WORDS.sub(" ", goal)
    topic = " ".join(topic.split()).strip(" .,:;!?-\"'")
    return topic or mt.topic_of(text) or "the flock"


def compose(shape: str, text: str, rng: random.Random) -> str:
    topic = topic_of(text)
    return _WRITERS[shape](text, topic, rng)


# --- haiku -------------------------------------------------------------------------------


def syllables(word: str) -> int:
    """A rough English syllable count: vowel groups, a silent final e dropped."""
    w = re.sub(r"[^a-z]", "", word.lower())
    if not w:
        return 0
    groups = re.findall(r"[aeiouy]+", w)
    count = len(groups)
    if w.endswith("e") and not w.endswith(("le", "ee", "ye")) and count > 1:
        count -= 1
    return max(1, count)


def line_syllables(line: str) -> int:
    return sum(syllables(w) for w in line.split())


def _closest(candidates: list[str], target: int) -> str:
    return min(candidates, key=lambda c: (abs(line_syllables(c) - target), len(c)))


def _haiku(text: str, topic: str, rng: random.Random) -> str:
    terms = mt.key_terms(topic, limit=3) or mt.key_terms(text, limit=3) or ["the wire"]
    head = topic if line_syllables(topic) <= 6 else " ".join(terms[:2])
    key = terms[-1]
    first = _closest([f"{head}", f"{head} at dawn", f"soft {head}", f"{head}, and still", f"first {head} of the day",
                      f"{head} in the rain"], 5)
    middles = [
        f"crows on the wire watch the {key}",
        f"the wind carries {key} away",
        f"a black wing brushes the {key}",
        f"we wait by the {key} and listen",
        f"every {key} remembers us",
        f"slowly the {key} turns to light",
    ]
    near = [m for m in middles if abs(line_syllables(m) - 7) <= 1]
    second = rng.choice(near) if near else _closest(middles, 7)
    third = _closest([f"then, quiet {key}", "and then silence", f"{key}, then the night", "one caw, and it's gone",
                      f"home, with the {key}"], 5)
    return "\n".join(mt.capital(line) for line in (first, second, third))


# --- tweet, tagline ----------------------------------------------------------------------


def _tweet(text: str, topic: str, rng: random.Random) -> str:
    terms = mt.key_terms(text, limit=4)
    tag = "#" + re.sub(r"[^A-Za-z0-9]", "", (terms[0] if terms else "crows").title())
    hook = rng.choice((f"Big news about {topic}!", f"{mt.capital(topic)}, at last.", f"Meet {topic}."))
    body = rng.choice((
        f"Everything you wanted from {topic}, nothing you didn't.",
        f"We built {topic} for people who hate waiting.",
        f"{mt.capital(topic)} is ready: come and see what the fuss is about.",
    ))
    tweet = f"{hook} {body} {tag}"
    if len(tweet) > TWEET_MAX:
        tweet = tweet[: TWEET_MAX - len(tag) - 2].rsplit(" ", 1)[0] + "… " + tag
    return tweet


def _tagline(text: str, topic: str, rng: random.Random) -> str:
    name = mt.capital(topic)
    return rng.choice((
        f"{name}: worth the flight.",
        f"{name}. Clever by nature.",
        f"{name}, made to be remembered.",
        f"{name}: small, sharp, yours.",
    ))


# --- code --------------------------------------------------------------------------------

_LANGS = (
    ("javascript", re.compile(r"\b(?:javascript|js|node|typescript|ts|react)\b", re.I)),
    ("sql", re.compile(r"\b(?:sql|query|postgres|sqlite|mysql)\b", re.I)),
    ("python", re.compile(r".", re.S)),
)


def _code(text: str, topic: str, rng: random.Random) -> str:
    lang = next(name for name, pattern in _LANGS if pattern.search(text))
    named = re.search(r"`?([A-Za-z_][A-Za-z0-9_]*)\(\)`?|\bfunction\s+`?([A-Za-z_][A-Za-z0-9_]*)", text)
    name = (named.group(1) or named.group(2)) if named else "_".join(mt.key_terms(topic, limit=2)) or "handle"
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)[:40] or "handle"
    goal = mt.shorten(mt.goal_of(text), 14)
    if lang == "javascript":
        body = (
            f"// {mt.capital(goal)}: guard the input, then do the one job.\n"
            f"function {name}(value) {{\n"
            f"  if (value === undefined || value === null) {{\n"
            f"    throw new TypeError(\"{name} needs a value\");\n"
            f"  }}\n"
            f"  return String(value).trim();\n"
            f"}}"
        )
    elif lang == "sql":
        body = (
            f"-- {mt.capital(goal)}: name the columns, filter before joining.\n"
            f"SELECT id, name, created_at\n"
            f"FROM items\n"
            f"WHERE created_at >= :since\n"
            f"ORDER BY created_at DESC;"
        )
    else:
        body = (
            f"def {name}(value):\n"
            f"    \"\"\"{mt.capital(goal)}: guard the input, then do the one job.\"\"\"\n"
            f"    if value is None:\n"
            f"        raise ValueError(\"{name} needs a value, got None\")\n"
            f"    return str(value).strip()\n"
            f"\n"
            f"\n"
            f"def test_{name}_refuses_none():\n"
            f"    import pytest\n"
            f"    with pytest.raises(ValueError):\n"
            f"        {name}(None)"
        )
    lead = rng.choice(("The fix, with a test for it:", "Here is the fixed version:", "Fixed; the guard is the change:"))
    return f"{lead}\n\n```{lang}\n{body}\n```"


# --- list, summary -----------------------------------------------------------------------


def _count(text: str) -> int:
    m = re.search(r"\b(\d{1,2})\b", text)
    if m and 2 <= int(m.group(1)) <= 10:
        return int(m.group(1))
    for word, n in _COUNTS.items():
        if re.search(rf"\b{word}\b", text, re.I):
            return n
    return 5


def _list(text: str, topic: str, rng: random.Random) -> str:
    n = _count(text)
    terms = mt.key_terms(topic, limit=n) or [topic]
    angles = [
        "what most people get wrong about it",
        "how it started, in one line",
        "the number worth remembering",
        "a surprising example",
        "where it goes next",
        "the usual objection, and its answer",
        "what it costs, and what it saves",
        "the one thing to try first",
        "who it matters to most",
        "how to tell it is working",
    ]
    rng.shuffle(angles)
    items = []
    for i in range(n):
        term = terms[i % len(terms)]
        items.append(f"{i + 1}. {mt.capital(topic) if i % 2 == 0 else mt.capital(term)}: {angles[i % len(angles)]}.")
    return "\n".join(items)


def _summary(text: str, topic: str, rng: random.Random) -> str:
    about = set(mt.key_terms(topic, limit=10))
    terms = [t for t in mt.key_terms(text, limit=8) if t not in about and not _SHAPE_WORDS.fullmatch(t)][:3]
    named = (", ".join(terms[:-1]) + f" and {terms[-1]}" if len(terms) > 1
             else terms[0] if terms else "what it says and what it leaves open")
    opening = rng.choice((f"In short, {topic} comes down to {named}.", f"The gist of {topic}: {named}."))
    return " ".join((
        opening,
        f"The strongest point is {terms[0]}, and the rest follows from it." if terms
        else "The strongest point comes first, and the rest follows from it.",
        "What is settled is stated plainly; what is still open is named as open.",
        "Read the full text for the figures and the caveats.",
    ))


_WRITERS = {
    "haiku": _haiku,
    "tweet": _tweet,
    "tagline": _tagline,
    "code": _code,
    "list": _list,
    "summary": _summary,
}
