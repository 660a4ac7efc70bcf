"""The nests router: one module per seam, each with its own sub-router."""

from ninja import Router

from nests.api.rooms import router as rooms_router

router = Router()
router.add_router("", rooms_router)
