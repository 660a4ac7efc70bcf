"""What a crow or requester may do. One module per seam: strikes (rate limits and pranks),
the trust ledger, approvals and verdicts."""

from trust.models.governance import Breach, Decision
from trust.models.ledger import LEVEL_NAMES, REGULAR, STRANGER, TRUSTED, TrustEntry, TrustHolder
from trust.models.strikes import Post, Poster, Strike
from trust.models.verdicts import Approval, Target, Verdict

__all__ = [
    "LEVEL_NAMES",
    "REGULAR",
    "STRANGER",
    "TRUSTED",
    "Approval",
    "Breach",
    "Decision",
    "Post",
    "Poster",
    "Strike",
    "Target",
    "TrustEntry",
    "TrustHolder",
    "Verdict",
]
