"""Where work happens. One module per seam: rooms (nests and direct chats and their
messages), lists (todo lists and their pipeline)."""

from nests.models.lists import Banter, CrowRotation, FlightGate, Item, Sortie, TodoList
from nests.models.rooms import Nest, NestMessage

__all__ = ["Banter", "CrowRotation", "FlightGate", "Item", "Nest", "NestMessage", "Sortie", "TodoList"]
from nests.models.chat import ChatRequest, Claim, Invocation, NestBudget  # noqa: E402,F401  (the chatroom)
from nests.models.ledger import Debate, Expectation, OrchestrationDecision  # noqa: E402,F401  (work that doesn't stall)
