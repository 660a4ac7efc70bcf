"""The flock's vocabularies, each defined once: message kinds, who speaks besides crows
(the owner, the harness, the Sentry) and trust levels. Models take their choices from
here, actions and queries their names, the API schemas their literals, and the pages
their words (`page_vocab`, put into every page's data by nests/views.py).

A new message kind is added here (and to the places that give it meaning: who may post
it, what dispatch does with it, how the page draws it), not in ten files.
"""

from __future__ import annotations

from typing import Any

from django.db import models

# Who speaks besides crows. The owner is the one human; the harness posts nudges and
# notices; the Sentry posts only flags.
OWNER = "owner"
HARNESS = "harness"
SENTRY = "Sentry"
# Authors the harness posts as: their messages skip Jev and the rate limit.
HARNESS_AUTHORS: tuple[str, ...] = (HARNESS, SENTRY)


class MessageKind(models.TextChoices):
    """The kinds of a nest message (the event contract's eight)."""

    SAY = "say"
    REQUEST = "request"
    CLAIM = "claim"
    DELIVER = "deliver"
    REFER = "refer"
    DECLINE = "decline"
    NUDGE = "nudge"  # the harness only
    FLAG = "flag"  # the Sentry only


KINDS: tuple[str, ...] = tuple(MessageKind.values)
# What a member (the owner or a crow) may name as its header; nudge and flag are the harness's.
CROW_KINDS: tuple[str, ...] = (
    MessageKind.SAY,
    MessageKind.REQUEST,
    MessageKind.CLAIM,
    MessageKind.DELIVER,
    MessageKind.REFER,
    MessageKind.DECLINE,
)
HARNESS_KINDS: tuple[str, ...] = (MessageKind.NUDGE, MessageKind.FLAG)
# Kinds that answer a request: they refer to it and go back to its requester.
REPLY_KINDS: tuple[str, ...] = (MessageKind.CLAIM, MessageKind.DELIVER, MessageKind.DECLINE)


class TrustLevel(models.IntegerChoices):
    """A holder's trust for one task type (the trust ledger)."""

    STRANGER = 0, "stranger"
    REGULAR = 1, "regular"
    TRUSTED = 2, "trusted"


STRANGER, REGULAR, TRUSTED = TrustLevel.STRANGER.value, TrustLevel.REGULAR.value, TrustLevel.TRUSTED.value
LEVEL_NAMES: dict[int, str] = {level.value: str(level.label) for level in TrustLevel}


def page_vocab() -> dict[str, Any]:
    """The vocabularies as the pages read them (static/ui/ reads `ui.vocab`)."""
    return {
        "kinds": list(KINDS),
        "crow_kinds": list(CROW_KINDS),
        "owner": OWNER,
        "harness": HARNESS,
        "sentry": SENTRY,
        "trust_levels": [LEVEL_NAMES[level] for level in sorted(LEVEL_NAMES)],
    }
