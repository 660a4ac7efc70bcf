"""Redis outages in the logs: one line a minute, not a traceback a second (nor a line
an event, from a process that publishes while Redis is down).

While Redis is down, channels_redis's receive task logs "Unexpected exception in receive
task" with a full traceback every second it retries (some 60 lines each), although
delivery goes on without Redis (docs/STREAM.md). This filter lets the first such record of
a minute through as one line naming the exception, and drops the rest of that minute.
"""

from __future__ import annotations

import logging
import threading
import time

EVERY_S = 60.0
# How long the start-up probe waits for Redis to answer (a name that does not resolve may
# take longer: the resolver's own timeout).
REDIS_PROBE_TIMEOUT_S = 1.0


class OncePerMinute:
    """Whether to say it now: yes at most once in EVERY_S, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = float("-inf")

    def now(self) -> bool:
        at = time.monotonic()
        with self._lock:
            if at - self._last < EVERY_S:
                return False
            self._last = at
            return True


def redis_unreachable(exc: BaseException) -> bool:
    """Whether a failure to publish means Redis is away (refused, reset, timed out, closed),
    rather than a bug in what was sent."""
    import redis.exceptions

    return isinstance(exc, OSError | TimeoutError | redis.exceptions.ConnectionError | redis.exceptions.TimeoutError)


# A process that publishes while Redis is down fails once per event (a worker flying lists
# publishes dozens a minute): said once a minute, like the receive task's retries.
PUBLISH_FAILURES = OncePerMinute()


class RedisOutageLogs(logging.Filter):
    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self._once = OncePerMinute()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or record.exc_info[1] is None:
            return True
        if not self._once.now():
            return False
        exc = record.exc_info[1]
        record.msg = (
            f"{record.getMessage()}: {type(exc).__name__}: {exc} (Redis unreachable? delivery goes on "
            f"through the database; this is said once a minute)"
        )
        record.args = None
        record.exc_info = record.exc_text = None
        return True


def say_if_redis_is_away(program: str) -> bool:
    """At start-up, with REDIS_URL set: whether Redis answers, and one warning line naming
    REDIS_URL when it does not. Not an error: a server runs on without Redis (its own
    subscribers get its events at once, other servers' through the database poll), but a
    wrong host or port should be said when the process starts, not at the first stream.
    """
    from django.conf import settings

    url = getattr(settings, "REDIS_URL", "")
    if not url:
        return True
    import redis

    try:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=REDIS_PROBE_TIMEOUT_S, socket_timeout=REDIS_PROBE_TIMEOUT_S
        )
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [""])[0]
        logging.getLogger("crows.stream").warning(
            "%s: REDIS_URL %s is not answering (%s: %s); streams go on through the database, "
            "other servers' events arriving within CROWS_STREAM_POLL_S (%s s), until it does",
            program, _without_password(url), type(exc).__name__, reason, settings.CROWS_STREAM_POLL_S,
        )
        return False
    return True


def _without_password(url: str) -> str:
    """The URL as a log line may show it: a password becomes `***`."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # IPv6: urlsplit took its brackets off
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
