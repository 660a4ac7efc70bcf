"""Typed readers for settings that come from the environment.

Every setting has a default that works with nothing set. A value that cannot be read
stops start-up with ImproperlyConfigured naming the variable, so a typo in a deployment
never turns into a silently different flock.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ImproperlyConfigured


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str) -> str:
    value = _raw(name)
    return default if value is None else value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ImproperlyConfigured(f"{name} must be a finite number, got {value!r}")
    _check_range(name, number, minimum, maximum)
    return number


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off, got {value!r}")


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")


def env_url(name: str, default: str = "") -> str:
    """An http(s) URL with a host ("http://localhost:11434/v1"), or the default when unset:
    a URL without its scheme would only fail at the first call, far from its cause."""
    value = _raw(name)
    if value is None:
        return default
    scheme, sep, rest = value.partition("://")
    if scheme.lower() not in ("http", "https") or not sep or not rest.split("/", 1)[0]:
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL, such as http://localhost:11434/v1, got {value!r}")
    return value


def env_origins(name: str) -> list[str]:
    """A comma-separated list of web origins (`scheme://host[:port]`), lower-cased."""
    value = _raw(name)
    if value is None:
        return []
    origins = []
    for item in value.split(","):
        origin = item.strip().rstrip("/").lower()
        if not origin:
            continue
        scheme, sep, rest = origin.partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
            raise ImproperlyConfigured(
                f"{name} must list origins such as https://crows.example:8443, got {item.strip()!r}"
            )
        origins.append(origin)
    return origins


def settings_or_exit(program: str) -> None:
    """Read the settings and set Django up now, before any command or server starts: a
    value the environment gets wrong stops `program` with one line naming it and exit
    status 2, instead of a traceback with the one useful line at its end. Setting up
    covers what the apps check when they load, CROWS_BRAIN among them (flock/apps.py)."""
    import django

    try:
        # Without the script prefix, as Django's own ASGI set-up does; manage.py's set-up
        # sets it, after this one.
        django.setup(set_prefix=False)
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"{program}: {exc}\n")
        raise SystemExit(2) from None


def migrated_or_exit(program: str) -> None:
    """Stop `program` with one line and exit status 2 when the database lacks some of the
    code's migrations (`daphne` started before `manage.py migrate`, or after an upgrade).
    A database that does not answer is let through: the server says so per request."""
    from django.db import connection

    # Late: the settings import this module, and settings load before django.db may be.
    from flock.db import NOT_MIGRATED, unapplied_migrations

    try:
        missing = unapplied_migrations()
    finally:
        connection.close()  # this thread's: the server's own threads open their own
    if missing:
        sys.stderr.write(f"{program}: {NOT_MIGRATED.format(count=missing)}\n")
        raise SystemExit(2)


@contextmanager
def database_away_in_one_line(program: str) -> Iterator[None]:
    """A command whose database does not answer (PostgreSQL down or unreachable, a SQLite
    file that cannot be opened) ends with one line naming DATABASE_URL and exit status 1,
    not a traceback; `--traceback` still shows it. A database error that is a bug is
    raised as it is."""
    from django.db import DatabaseError

    # Late: the settings import this module, and settings load before django.db may be.
    from flock.db import first_line

    try:
        yield
    except DatabaseError as exc:
        if "--traceback" in sys.argv or not _not_answering(exc):
            raise
        sys.stderr.write(f"{program}: the database in DATABASE_URL is not answering: {first_line(exc)}\n")
        raise SystemExit(1) from None


def _not_answering(exc: Exception) -> bool:
    """A connection that could not be made or kept (not a deadlock, a timeout or a full
    disk, which are errors of the command's own work): PostgreSQL refusing, unreachable or
    gone, the pool's wait for a connection run out, SQLite's file not opening."""
    from django.db.utils import InterfaceError, OperationalError

    if not isinstance(exc, OperationalError | InterfaceError):
        return False
    words = str(exc).lower()
    return "connect" in words or "unable to open database file" in words
