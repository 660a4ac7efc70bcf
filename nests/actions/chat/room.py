"""Saying something in a room: the chat core's leaf (docs/CHATROOM.md, "The chat core").

`say` numbers one message, stores it and emits `nest.message`, in the caller's
transaction and under the room's row lock. It checks nothing and causes nothing: checking
a member's post happens before it (nests.actions.messages.check_message), and what a
message causes is the reactors' business, run after it by nests.actions.chat.react. So
every module may call it, and it imports no rule.
"""

from __future__ import annotations

from django.db import connection, transaction

from flock.events import emit, lock_event_log
from flock.vocab import MessageKind
from nests.models import Nest, NestMessage

TEXT_MAX = 2000


def lock_room_numbering(room_pk: int) -> tuple[Nest, int]:
    """The room's row, locked until the commit, and the next message number taken for the
    caller's message: one `UPDATE … RETURNING` instead of a locking read now and an
    UPDATE when the message is said. Pass the number to `say` as `number`. The caller
    says nothing else in the room before it (so numbers follow the order messages are
    said), and a rollback gives the number back with everything else."""
    table = connection.ops.quote_name(Nest._meta.db_table)
    rows = list(Nest.objects.raw(
        f'UPDATE {table} SET "next_msg_n" = "next_msg_n" + 1 WHERE "id" = %s RETURNING *', [room_pk]
    ))
    if not rows:
        raise Nest.DoesNotExist(f"no nest with pk {room_pk}")
    return rows[0], rows[0].next_msg_n - 1


def say(
    room: Nest,
    *,
    author: str,
    text: str,
    kind: str = MessageKind.SAY,
    to: str = "",
    refers_to: str = "",
    tagged_by: str = "header",
    room_locked: bool = False,
    number: int | None = None,
) -> NestMessage:
    """Store `text` as message `<nest_id>-<n>` and emit `nest.message`; commits with the
    caller. A text over the cap is cut (the harness words its own notices; a member's
    post was checked against the cap before). `room_locked`: `room` is the row the
    caller locked in this transaction, so it is not locked (nor read) again. `number`:
    the message number the caller took with the room's lock (`lock_room_numbering`)."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1].rstrip() + "…"
    # No savepoint: nothing here is retried on its own, and a post is one transaction.
    with transaction.atomic(savepoint=False):
        lock_event_log()
        locked = room if room_locked or number is not None else Nest.objects.select_for_update().get(pk=room.pk)
        if number is not None:
            n = number
        else:
            n = locked.next_msg_n
            locked.next_msg_n = n + 1
            locked.save(update_fields=["next_msg_n"])
            room.next_msg_n = locked.next_msg_n
        message = NestMessage.objects.create(
            nest=locked, n=n, msg_id=f"{locked.nest_id}-{n}", kind=kind, author=author,
            text=text, to=to or "", refers_to=refers_to or "", tagged_by=tagged_by,
        )
        emit("nest.message", message.record(), nest_id=locked.nest_id)
    return message
