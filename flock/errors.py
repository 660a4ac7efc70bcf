"""Domain errors. Actions raise these; crows_site/api.py maps each to its HTTP status once."""

from __future__ import annotations


class CrowsError(Exception):
    status = 400

    def __init__(self, message: str, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra

    def body(self) -> dict[str, object]:
        return {"message": self.message, **self.extra}


class BadInput(CrowsError):
    status = 400


class NotFound(CrowsError):
    status = 404


class Conflict(CrowsError):
    status = 409


class TooLarge(CrowsError):
    status = 413


class RateLimited(CrowsError):
    """A requester is pranked: the body carries a playful message and `cooldown_s`."""

    status = 429

    def __init__(self, message: str, *, cooldown_s: int) -> None:
        super().__init__(message, cooldown_s=cooldown_s)
        self.cooldown_s = cooldown_s
