"""`manage.py owner_token`: print a fresh random owner token for CROWS_OWNER_TOKEN."""

from __future__ import annotations

import secrets
from typing import Any

from flock.management.cli import CrowsCommand

# 32 random bytes: 43 URL-safe characters, far past the 24 start-up asks for.
TOKEN_BYTES = 32


class Command(CrowsCommand):
    help = (
        "Print a fresh random owner token (43 URL-safe characters) to set as CROWS_OWNER_TOKEN; "
        "it is not stored anywhere. Changing the token ends every browser's login."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(secrets.token_urlsafe(TOKEN_BYTES))
