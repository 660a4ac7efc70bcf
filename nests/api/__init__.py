"""The nests router: one module per seam, each with its own sub-router."""

from ninja import Router

from nests.api.ledger import router as ledger_router  # work that doesn't stall
from nests.api.lists import router as lists_router
from nests.api.messages import router as messages_router  # the chatroom
from nests.api.review import router as review_router
from nests.api.rooms import router as rooms_router

router = Router()
router.add_router("", rooms_router)
router.add_router("", lists_router)
router.add_router("", messages_router)
router.add_router("", ledger_router)
router.add_router("", review_router)
