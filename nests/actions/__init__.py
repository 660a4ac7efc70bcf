"""Every state change in nests. One module per seam; import from here."""

from nests.actions.lists import post_list, recover_lists, resume_after_verdict  # the list pipeline
from nests.actions.members import add_nest_member, remove_nest_member
from nests.actions.messages import post_message
from nests.actions.retention import prune
from nests.actions.rooms import create_nest, ensure_direct_chat, ensure_todo_nest

__all__ = ["create_nest", "ensure_direct_chat", "ensure_todo_nest", "post_message"]
__all__ += ["post_list", "recover_lists", "resume_after_verdict"]
__all__ += ["add_nest_member", "prune", "remove_nest_member"]
