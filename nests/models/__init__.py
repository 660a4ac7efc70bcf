"""Where work happens. One module per seam: rooms (nests and direct chats and their
messages), lists (todo lists and their pipeline)."""

from nests.models.rooms import Nest, NestMessage

__all__ = ["Nest", "NestMessage"]
