from __future__ import annotations

from typing import Any

from ninja import Schema


class VerdictIn(Schema):
    # Loose types on purpose: the action names the exact problem in a 400 {"message"}
    # (a missing or non-bool `approve` must never be read as a no).
    item_id: Any = None
    target: Any = None
    approve: Any = None
