"""How the mock brain sounds: registers of voice, and the phrases each register uses.

A crow's free-text ``voice`` (and persona) is read for cue words and mapped to one of a
few registers; each register has its own stock of openers, closers and the short lines a
chat turn needs (claim, acknowledge, decline, banter). A crow's own ``openers`` and
``closers``, when its Persona carries them, win over the stock. Choices inside a register
come from the request's hash, so the same request always reads the same.
"""

from __future__ import annotations

import functools
import hashlib
import random

from flock.brains.types import Persona

REGISTERS: tuple[str, ...] = ("terse", "brisk", "formal", "curious", "zippy", "warm", "grand")

# Cue words (matched as prefixes of the voice's words) that point at each register.
_CUES: dict[str, tuple[str, ...]] = {
    "terse": (
        "terse",
        "clipped",
        "dry",
        "laconic",
        "blunt",
        "curt",
        "gruff",
        "deadpan",
        "economical",
        "spare",
    ),
    "brisk": ("brisk", "crisp", "imperative", "efficient", "businesslike", "commanding", "tidy", "bullet"),
    "formal": (
        "formal",
        "precise",
        "measured",
        "scholarly",
        "pedantic",
        "meticulous",
        "deliberate",
        "steady",
        "calm",
    ),
    "curious": ("curious", "question", "breathless", "wonder", "eager", "inquisitive"),
    "zippy": ("fast", "punchy", "exclamation", "excitable", "bouncy", "zippy", "energetic"),
    "warm": ("warm", "cheerful", "friendly", "chatty", "kind", "gentle", "upbeat", "playful"),
    "grand": (
        "grand",
        "dramatic",
        "theatrical",
        "poetic",
        "lyrical",
        "mythic",
        "meandering",
        "story",
        "old-fashioned",
        "unhurried",
        "whimsical",
        "cryptic",
    ),
}

_OPENERS: dict[str, tuple[str, ...]] = {
    "terse": ("Noted.", "Right.", "Short answer first.", "Here it is."),
    "brisk": ("Right then.", "Here's the plan.", "Let's get to it.", "Straight to it:"),
    "formal": ("For the record,", "To be precise:", "Let us be exact.", "In order:"),
    "curious": ("Interesting —", "Ooh, a good question.", "Here's what I found.", "Curious one, this."),
    "zippy": ("Ooh, fun one.", "Easy — mostly.", "Right, quick!", "On it!"),
    "warm": ("Happy to help.", "Lovely, let's do this.", "Here you go.", "Glad you asked."),
    "grand": ("Picture this:", "Well now.", "Gather round.", "Hear me out."),
}

_CLOSERS: dict[str, tuple[str, ...]] = {
    "terse": ("Done.", "That's all.", "Logged.", "Nothing more to add."),
    "brisk": ("Counted and done.", "Back to work.", "Next.", "That's the plan; go."),
    "formal": ("That is the whole of it.", "Noted for the record.", "Working shown above.", "So it stands."),
    "curious": (
        "More questions than answers, as usual?",
        "Sources on request.",
        "Off again.",
        "What did I miss?",
    ),
    "zippy": ("Ship it!", "Holler if it breaks.", "Done and dusted!", "Next!"),
    "warm": ("Shout if you need more.", "Hope that helps!", "Always glad to.", "Take care of it gently."),
    "grand": (
        "And so the tale is told.",
        "That is the shape of it.",
        "Smoke clears.",
        "Many wings, one flight.",
    ),
}

# Claim lines: {req} is the requester, {gist} the request in a few words. None asks a
# question: Jev reads a question as a request, and wins over the CLAIM header when sure,
# so the claim would be lost and the request left open.
_CLAIMS: dict[str, tuple[str, ...]] = {
    "terse": ("Mine, @{req}. {Gist}. Back shortly.", "@{req}: taking it. {Gist}."),
    "brisk": ("On it, @{req} — {gist}. Back with it shortly.", "Right then, @{req}: {gist} is mine."),
    "formal": ("@{req}, I will take this: {gist}. A full answer follows.", "Claimed, @{req}: {gist}."),
    "curious": ("On it, @{req} — {gist}. Digging in now.", "Mine, @{req}! {Gist} — let's find out."),
    "zippy": ("Mine! On it, @{req} — {gist}.", "Ooh, @{req}, grabbing this: {gist}!"),
    "warm": ("Happy to take this, @{req}: {gist}.", "Got it, @{req} — {gist}, coming up."),
    "grand": (
        "@{req}, this one is mine: {gist}. Give me a moment and a chimney.",
        "Leave it with me, @{req}: {gist}.",
    ),
}

_ACKS: dict[str, tuple[str, ...]] = {
    "terse": ("@{req}, seen.", "@{req}: noted."),
    "brisk": ("@{req}, seen and counted.", "Got it, @{req}."),
    "formal": ("@{req}, received and noted.", "Acknowledged, @{req}."),
    "curious": ("@{req}, seen — interesting.", "Noted, @{req}; thinking about it."),
    "zippy": ("Seen, @{req}!", "Yep, @{req}, got it!"),
    "warm": ("Thanks, @{req}, I've seen it.", "Seen, @{req} — thank you."),
    "grand": ("Heard, @{req}, and remembered.", "Well now, @{req}: seen."),
}

_DECLINES: dict[str, tuple[str, ...]] = {
    "terse": ("@{req}, passing: {reason}.",),
    "brisk": ("@{req}, not this one: {reason}.",),
    "formal": ("@{req}, I must decline: {reason}.",),
    "curious": ("@{req}, I'd only guess at this one: {reason}.",),
    "zippy": ("Ah, @{req}, gotta pass: {reason}.",),
    "warm": ("Sorry, @{req}, I have to say no to this one: {reason}.",),
    "grand": ("Alas, @{req}, this flight is not mine: {reason}.",),
}

# Banter by how the speaker sees the listener (read from the relationship line).
_BANTER: dict[str, tuple[str, ...]] = {
    "rival": (
        "bet you a shiny button I land first next time.",
        "we'll see whose plan survives the week.",
        "still keeping score, are we?",
    ),
    "fond": (
        "good flying out there; don't let it go to your head.",
        "the flock's better with you in it.",
        "save me a perch, would you?",
    ),
    "vexed": (
        "we have talked about this.",
        "one day you'll surprise me. Not today.",
        "I'm counting to ten. In feathers.",
    ),
    "plain": ("see you in the next nest.", "your move.", "keep your wings dry."),
}
_TONE_CUES: dict[str, tuple[str, ...]] = {
    "rival": ("rival", "spar", "argu", "bicker", "compet", "score", "twin", "turns"),
    "fond": ("fond", "love", "trust", "grateful", "respect", "admire", "favourite", "gift", "keeps"),
    "vexed": ("wish", "never", "winces", "stop", "exhaust", "gritted", "nearly", "less fond"),
}


def voice_register(persona: Persona) -> str:
    """The register a persona's voice text points at; a stable pick when nothing matches."""
    return _register(persona.name, persona.voice, persona.persona[:300])


@functools.lru_cache(maxsize=512)
def _register(name: str, voice: str, persona_text: str) -> str:
    def score(text: str) -> dict[str, int]:
        words = [w.strip(".,;:'\"()!?") for w in text.lower().split()]
        return {
            reg: sum(1 for w in words for cue in cues if w.startswith(cue)) for reg, cues in _CUES.items()
        }

    # The voice text counts double: the persona paragraph mostly breaks ties.
    from_voice, from_persona = score(voice), score(persona_text)
    scores = {reg: 2 * from_voice[reg] + from_persona[reg] for reg in REGISTERS}
    best = max(scores.values())
    if best == 0:
        digest = hashlib.blake2b((name + voice).encode(), digest_size=4).digest()
        return REGISTERS[int.from_bytes(digest, "big") % len(REGISTERS)]
    return next(reg for reg in REGISTERS if scores[reg] == best)


def banter_tone(relationship: str) -> str:
    line = relationship.lower()
    scores = {tone: sum(line.count(cue) for cue in cues) for tone, cues in _TONE_CUES.items()}
    best = max(scores.values())
    return next(t for t in ("rival", "vexed", "fond") if scores[t] == best) if best else "plain"


class Voice:
    """One crow's phrasing for one request; ``rng`` is seeded from the request's hash."""

    def __init__(self, persona: Persona, rng: random.Random) -> None:
        self.persona = persona
        self.register = voice_register(persona)
        self.rng = rng

    def _pick(self, own: tuple[str, ...], stock: dict[str, tuple[str, ...]]) -> str:
        pool = tuple(p for p in own if p.strip()) or stock[self.register]
        return self.rng.choice(pool)

    def opener(self) -> str:
        return self._pick(tuple(self.persona.openers), _OPENERS)

    def closer(self) -> str:
        return self._pick(tuple(self.persona.closers), _CLOSERS)

    def claim(self, req: str, gist: str) -> str:
        return _fill(self.rng.choice(_CLAIMS[self.register]), req=req, gist=gist)

    def ack(self, req: str) -> str:
        return _fill(self.rng.choice(_ACKS[self.register]), req=req, gist="")

    def decline(self, req: str, reason: str) -> str:
        return self.rng.choice(_DECLINES[self.register]).format(req=req, reason=reason)

    def banter(self, relationship: str) -> str:
        return self.rng.choice(_BANTER[banter_tone(relationship)])

    def strength_phrase(self) -> str:
        """The crow's strength in a few words ('research', 'code', 'data and records')."""
        head = self.persona.strength.split(":", 1)[0].strip()
        return head[:60] or "this kind of work"


def _fill(template: str, *, req: str, gist: str) -> str:
    return template.format(req=req, gist=gist, Gist=gist[:1].upper() + gist[1:])
