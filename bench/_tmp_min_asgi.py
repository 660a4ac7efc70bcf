from crows_site.asgi import application  # noqa
import os
from django.db import transaction
from nests import actions
from nests.models import Nest, NestMessage
from flock.events import emit

def minimal(nest_id, *, author, text, to=None, kind=None, refers_to=None):
    mode = os.environ.get("MIN_MODE", "insert")
    with transaction.atomic():
        room = Nest.objects.select_for_update().get(nest_id=nest_id)
        n = room.next_msg_n
        room.next_msg_n = n + 1
        room.save(update_fields=["next_msg_n"])
        m = NestMessage.objects.create(nest=room, n=n, msg_id=f"{room.nest_id}-{n}", kind="say", author=author, text=text, tagged_by="default")
        if mode == "emit":
            emit("nest.message", m.record(), nest_id=room.nest_id)
    return m
actions.post_message = minimal
