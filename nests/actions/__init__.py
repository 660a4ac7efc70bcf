"""Every state change in nests. One module per seam; import from here."""

from nests.actions.messages import post_message
from nests.actions.rooms import create_nest, ensure_direct_chat, ensure_todo_nest

__all__ = ["create_nest", "ensure_direct_chat", "ensure_todo_nest", "post_message"]
