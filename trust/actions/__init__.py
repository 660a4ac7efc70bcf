"""Every state change in trust. One module per seam; import from here."""

from trust.actions.strikes import admit_post, on_strike, poster_key

__all__ = ["admit_post", "on_strike", "poster_key"]
