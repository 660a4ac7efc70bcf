"""What a crow or requester may do. One module per seam: strikes (rate limits and pranks);
the trust ledger, approvals and verdicts live beside it."""

from trust.models.strikes import Post, Poster, Strike

__all__ = ["Post", "Poster", "Strike"]
