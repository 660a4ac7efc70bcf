"""What a reactor hands back: the effects the chat core's loop applies
(docs/CHATROOM.md, "The chat core").

A reactor reads the room and the message just stored (`Posted`) and returns `Effects`:
messages to say, crows to invoke, expectations to open on a message it says, and whether
the rest of the reactors should stand down. It never says anything itself, never invokes
anyone, and never calls another reactor; nests.actions.chat.react applies what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flock.vocab import MessageKind

if TYPE_CHECKING:
    from flock.models import Crow
    from nests.models import ChatRequest, Claim, Debate, Invocation, Nest, NestBudget, NestMessage


@dataclass
class Expect:
    """An expectation to open on a message the loop says (its id is known only then)."""

    crow: str
    check: str
    expected: str
    debate: Debate | None = None
    request: ChatRequest | None = None
    due_at: datetime | None = None


@dataclass
class Say:
    """A message to say in the room (or in `nest`). The loop stores it, lets the reactors
    react to it in turn, then opens `opens` on it and calls `then` with it."""

    author: str
    text: str
    kind: str = MessageKind.SAY
    to: str = ""
    refers_to: str = ""
    nest: Nest | None = None
    # The invocation in whose answer it is said: a crow it invokes is one link further
    # down that chain (the loop guard, docs/CHATROOM.md).
    invocation: Invocation | None = None
    opens: list[Expect] = field(default_factory=list)
    then: Callable[[NestMessage], None] | None = None
    # Crows this message invokes, as its trigger, once the reactors have read it (an
    # owner's decision handed back to the crow that asked for it).
    invoke: list[Invoke] = field(default_factory=list)


@dataclass
class Invoke:
    """A crow to invoke on the message: one exchange of the room's turn."""

    crow: str
    reason: str
    expect: str
    fit: float | None = None
    candidates: dict[str, float] = field(default_factory=dict)
    task_type: str = "chat"


@dataclass
class Effects:
    say: list[Say] = field(default_factory=list)
    invoke: list[Invoke] = field(default_factory=list)
    # Invocations a spent turn stopped, to run now that the room has a turn.
    resume: list[Invocation] = field(default_factory=list)
    # The message is dealt with: the reactors after this one do not run (a breach, the
    # owner's decision phrase).
    done: bool = False

    def __bool__(self) -> bool:
        return bool(self.say or self.invoke or self.resume or self.done)


NOTHING = Effects()


@dataclass
class Posted:
    """A message just stored, with what the post knew of it, as the reactors read it.
    The loop fills `request`, `claim` and `invoked` as the reactors that decide them run."""

    room: Nest
    message: NestMessage
    crow: Crow | None = None  # the posting crow (a member's post); None otherwise
    harness: bool = False  # said by the harness, the Sentry or a moderator, unchecked
    invocation: Invocation | None = None  # the invocation it answers (or is said in)
    on_behalf_of: str = ""
    relayed_from: str = ""
    finding: Any = None  # the Sentry's Finding on the post, if it breached
    target: ChatRequest | None = None  # the request a claim/deliver/decline answers
    claiming: bool = False  # a claim that stood under the lock
    request_facts: tuple[str, str, list[Any]] | None = None  # (mode, task type, Jev answers)
    expectation_answer: Any = None
    # Jev's `expectation_met` answers for the room's open expectations, by expectation pk
    # (nests.actions.chat.met), read before the lock.
    met_answers: dict[int, Any] = field(default_factory=dict)
    rights_note: str = ""  # the post was kept as talk by speaking rights: the harness's line
    depth: int = 0  # how many says deep in the loop (0: a member's post or an entry point)
    request: ChatRequest | None = None
    claim: Claim | None = None
    invoked: Invocation | None = None
    # The room's budget row as this post locked and wrote it (the owner's turn granted),
    # so spending an exchange on it does not read it again.
    budget: NestBudget | None = None
