from __future__ import annotations

from django.db import models

from flock.vocab import MessageKind
from nests.payloads import MessageRecord


class Nest(models.Model):
    """A room. The `todo` nest doubles as the open flock (every crow a member); direct
    chats `dm-<crow>` hold the owner and one crow and do not count toward the nest cap."""

    class Kind(models.TextChoices):
        NEST = "nest"
        OPEN = "open"  # the todo nest
        DIRECT = "direct"

    nest_id = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=40)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.NEST)
    # Core crows, in the order the owner picked them (rotation follows this order).
    core = models.JSONField(default=list)
    # The next message number; bumped under a row lock so msg ids are gap-free per nest.
    next_msg_n = models.PositiveIntegerField(default=1)
    created_by = models.CharField(max_length=40, default="owner")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.nest_id


class NestMessage(models.Model):
    nest = models.ForeignKey(Nest, on_delete=models.CASCADE, related_name="messages")
    n = models.PositiveIntegerField()
    msg_id = models.CharField(max_length=80, unique=True)
    kind = models.CharField(max_length=12, choices=MessageKind.choices)
    author = models.CharField(max_length=40)
    text = models.TextField()
    to = models.CharField(max_length=40, blank=True, default="")
    refers_to = models.CharField(max_length=80, blank=True, default="")
    tagged_by = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["nest", "n"]
        constraints = [models.UniqueConstraint(fields=["nest", "n"], name="nest_message_number")]

    def record(self) -> MessageRecord:
        """The message record as docs/API.md defines it."""
        return {
            "msg_id": self.msg_id,
            "kind": self.kind,
            "author": self.author,
            "text": self.text,
            "to": self.to,
            "refers_to": self.refers_to,
            "tagged_by": self.tagged_by,
        }
