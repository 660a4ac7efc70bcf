"""Corrections, acknowledged once by the crow corrected (
docs/GOVERNANCE.md, "5. Corrections acknowledged once").

A **correction** is an owner's message that refers to a crow's message (`refers_to`, set
over the API or by a `[… <msg_id>]` header) and reads as one: it opens with, or says, a
correction word ("no,", "that's wrong", "not quite", "actually it's …", "you got … wrong",
"should be", "please fix", CORRECTION_RE below). A rule, not a Jev question: Jev's `kind`
has no notion of it, and a correction needs the message it corrects named anyway, which
is what keeps the reading narrow.

- Dispatch invokes only the corrected crow (`corrected_crow`), to acknowledge it once and
  redo or explain; whoever the owner addressed, nobody else is invoked by it.
- The ledger opens `correction_handled` on that crow: met by its next message in the room.
- A crow's message that answers a correction (refers to it) and is not the corrected
  crow's first answer is stored and invokes no one (`answers_correction_again`): a second
  acknowledgement, or another crow chiming in.
"""

from __future__ import annotations

import re

from flock.vocab import HARNESS_AUTHORS, OWNER
from nests.models import NestMessage

CORRECTION_RE = re.compile(
    r"^\s*(?:@[\w-]+[\s,:]*)*(?:no|nope|nah|wrong|incorrect|not\s+quite|not\s+really|actually|correction|careful|"
    r"hold\s+on|wait)\b[\s,.:;!—-]"
    r"|\b(?:that'?s|that\s+is|this\s+is|it'?s|it\s+is)\s+(?:not\s+(?:right|correct|what\s+i)|wrong|incorrect|off)\b"
    r"|\byou(?:'ve|\s+have)?\s+(?:got|get|misread|misunderstood|mixed\s+up|confused|missed)\b"
    r"|\b(?:has|had|have|got|get|gets)\s+(?:it|this|that|the\s+\w+)\s+wrong\b"
    r"|\b(?:should\s+(?:be|have\s+been|say)|meant\s+to\s+be|is\s+supposed\s+to\s+be)\b"
    r"|\b(?:please\s+)?(?:fix|correct)\s+(?:this|that|it)\b|\bmistake\b|\bnot\s+what\s+i\s+(?:asked|meant|wanted)\b",
    re.IGNORECASE,
)
CORRECTION_REASON = "correction"


def is_correction_text(text: str) -> bool:
    return bool(CORRECTION_RE.search(text.replace("’", "'")))


def corrected_message(message: NestMessage) -> NestMessage | None:
    """The crow's message an owner's correction refers to, or None when `message` is no
    correction (not the owner's, names no crow's message, or reads as no correction)."""
    if message.author != OWNER or not message.refers_to or not is_correction_text(message.text):
        return None
    corrected = NestMessage.objects.filter(nest=message.nest, msg_id=message.refers_to).first()
    if corrected is None or corrected.author in (OWNER, *HARNESS_AUTHORS):
        return None
    return corrected


def corrected_crow(message: NestMessage) -> str:
    """The crow an owner's correction is for ("" if it is none)."""
    corrected = corrected_message(message)
    return corrected.author if corrected is not None else ""


def answers_correction_again(message: NestMessage) -> bool:
    """A crow's message refers to an owner's correction, and is not the corrected crow's
    first answer to it: stored, it invokes no one."""
    if message.author in (OWNER, *HARNESS_AUTHORS) or not message.refers_to:
        return False
    correction = NestMessage.objects.filter(nest=message.nest, msg_id=message.refers_to).first()
    if correction is None:
        return False
    crow = corrected_crow(correction)
    if not crow:
        return False
    if message.author != crow:
        return True
    earlier = NestMessage.objects.filter(
        nest=message.nest, author=crow, refers_to=correction.msg_id, n__lt=message.n
    )
    return earlier.exists()
