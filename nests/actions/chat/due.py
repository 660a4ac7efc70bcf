"""The time a promise names: "in five minutes", "in 2h", "within half an hour", "by noon",
"by 3pm", "by 15:30", "by tomorrow", "by end of day" (docs/GOVERNANCE.md).

`due_from_text(text, now)` returns the moment, or None when the text names no time. Clock
times are read in the server's time zone (settings.TIME_ZONE, UTC by default); a clock time
already past today means tomorrow. A duration is capped at 30 days.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta

from django.utils import timezone

MAX_AHEAD = timedelta(days=30)

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
    "thirty": 30, "forty": 40, "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 5,
}
UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "week": 7 * 86400, "weeks": 7 * 86400,
}
_NUM = r"(?P<num>\d+(?:\.\d+)?|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>" + "|".join(sorted(UNITS, key=len, reverse=True)) + r")"
DURATION_RE = re.compile(
    rf"\b(?:in|within|inside|under|give me|give it|after|takes?|another|next)\s+(?:(?:about|around|roughly|~)\s+)?"
    rf"{_NUM}\s*-?\s*(?:more\s+)?{_UNIT}\b",
    re.IGNORECASE,
)
HALF_RE = re.compile(r"\b(?:in|within)\s+(?:about\s+)?(?:half\s+an?|a\s+half)\s+hour\b", re.IGNORECASE)
QUARTER_RE = re.compile(r"\b(?:in|within)\s+(?:about\s+)?(?:a\s+)?quarter\s+(?:of\s+)?an?\s+hour\b", re.IGNORECASE)
# "by tonight", and the bare forms a promise uses as often ("I'll finish it tonight",
# "I'll send it EOD", "I'll wrap it up end of the week").
NAMED_RE = re.compile(
    r"(?:\b(?:by|before|until|till|at)\s+(?:the\s+)?|\b)(?P<name>noon|midday|midnight|tonight|tomorrow(?:\s+morning)?|"
    r"end\s+of\s+(?:the\s+)?day|eod|close\s+of\s+business|cob|end\s+of\s+(?:the\s+)?week)\b",
    re.IGNORECASE,
)
CLOCK_RE = re.compile(
    r"\b(?:by|before|until|till|at)\s+(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>a\.?m\.?|p\.?m\.?)?(?![\w:])",
    re.IGNORECASE,
)
SOON_RE = re.compile(r"\b(?:in\s+a\s+(?:sec|second|moment|minute|jiffy)|right\s+away|shortly|asap)\b", re.IGNORECASE)


def _number(word: str) -> float:
    word = word.lower()
    if word in NUMBER_WORDS:
        return float(NUMBER_WORDS[word])
    return float(word)


def _at(now: datetime, clock: time) -> datetime:
    local = timezone.localtime(now)
    moment = local.replace(hour=clock.hour, minute=clock.minute, second=0, microsecond=0)
    if moment <= local:
        moment += timedelta(days=1)
    return moment


def due_from_text(text: str, now: datetime | None = None) -> datetime | None:
    """When the promise in `text` falls due, or None if it names no time."""
    now = now or timezone.now()
    found: list[datetime] = []
    for m in DURATION_RE.finditer(text):
        seconds = _number(m.group("num")) * UNITS[m.group("unit").lower()]
        if 0 < seconds:
            found.append(now + min(timedelta(seconds=seconds), MAX_AHEAD))
    if HALF_RE.search(text):
        found.append(now + timedelta(minutes=30))
    if QUARTER_RE.search(text):
        found.append(now + timedelta(minutes=15))
    for m in NAMED_RE.finditer(text):
        name = " ".join(m.group("name").lower().split())
        if name in ("noon", "midday"):
            found.append(_at(now, time(12, 0)))
        elif name in ("midnight",):
            found.append(_at(now, time(0, 0)))
        elif name == "tonight":
            found.append(_at(now, time(21, 0)))
        elif name.startswith("tomorrow"):
            local = timezone.localtime(now) + timedelta(days=1)
            hour = 9 if "morning" in name else 17
            found.append(local.replace(hour=hour, minute=0, second=0, microsecond=0))
        elif "week" in name:
            local = timezone.localtime(now)
            days = (4 - local.weekday()) % 7
            friday = (local + timedelta(days=days)).replace(hour=17, minute=0, second=0, microsecond=0)
            found.append(friday if friday > local else friday + timedelta(days=7))
        else:  # end of day, eod, close of business
            found.append(_at(now, time(17, 0)))
    for m in CLOCK_RE.finditer(text):
        hour, minute = int(m.group("h")), int(m.group("m") or 0)
        ampm = (m.group("ampm") or "").lower().replace(".", "")
        if ampm and not 1 <= hour <= 12:
            continue
        if not ampm and m.group("m") is None:
            # "at 5" alone is too vague to be a clock time ("at 5 items"); "by 5" is one.
            if not m.group(0).lower().startswith("by") or hour > 12:
                continue
        if ampm == "pm" and hour != 12:
            hour += 12
        elif ampm == "am" and hour == 12:
            hour = 0
        if hour > 23 or minute > 59:
            continue
        found.append(_at(now, time(hour, minute)))
        if not ampm and 1 <= hour < 12:
            # "by 5" without am/pm: whichever 5 o'clock comes first.
            found.append(_at(now, time(hour + 12, minute)))
    if not found and SOON_RE.search(text):
        found.append(now + timedelta(minutes=1))
    return min(found) if found else None
