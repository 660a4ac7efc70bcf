"""The app with a nest POST's action replaced by a bare insert-and-publish, for
bench/post.py.

Same daphne, same ASGI stack, middleware, owner gate, django-ninja endpoint, validation
and response as the app; only `nests.actions.post_message` is swapped for what the stock
baseline does (number the message under the room's lock, insert it, emit its event). The
difference between this server's CPU per POST and the app's is the chatroom's own work
(Jev's tags, the poster's rate, the turn's budget, dispatch, expectations, decisions);
the difference between it and the stock baseline is the web stack's.
Never imported by the app.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from crows_site.asgi import application
from flock.events import emit
from nests import actions
from nests.models import Nest, NestMessage

__all__ = ["application"]


def bare_post_message(nest_id: str, *, author: Any, text: Any, **_ignored: Any) -> NestMessage:
    with transaction.atomic():
        room = Nest.objects.select_for_update().get(nest_id=nest_id)
        n = room.next_msg_n
        room.next_msg_n = n + 1
        room.save(update_fields=["next_msg_n"])
        message = NestMessage.objects.create(
            nest=room, n=n, msg_id=f"{room.nest_id}-{n}", kind="say", author=author, text=text, tagged_by="default"
        )
        emit("nest.message", message.record(), nest_id=room.nest_id)
    return message


actions.post_message = bare_post_message  # type: ignore[assignment]
