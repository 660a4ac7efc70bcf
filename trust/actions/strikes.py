"""Rate limits and pranks (docs/LISTS.md).

A requester or crow over its rate in a rolling minute gets a strike: a 429 with a playful
message and a cooldown that starts at CROWS_PRANK_COOLDOWN_S and doubles with each further
strike within a day. While cooling down every post is refused with the time left. The
strike is committed before the refusal is raised, so the ledger keeps it even though the
post itself is not stored.

The owner is never pranked: pranks are for requesters who flood the flock, and the owner
runs it. The owner's own limit (OWNER_LIST_RATE_FACTOR times the list rate, the nest rate
for nest posts) only guards against a runaway script: over it, a plain 429 says how many
posts the minute holds and when the next one fits, with no strike and no cooldown.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from flock.db import lock_or_create
from flock.errors import RateLimited
from trust.models import Post, Poster, Strike

Kind = Literal["list", "nest"]

PRANKS = [
    "Caw! The flock is busy fetching shiny things. Try again in {s} seconds.",
    "Too many crumbs, too fast: the crows hid your bread. Back in {s} seconds.",
    "The crows have filed your requests under 'later' and are sitting on them for {s} seconds.",
    "Murder of crows, meet flood of lists. We're taking a {s}-second dust bath.",
    "Somebody has been feeding us too quickly. The flock is napping for {s} seconds.",
]

# Called inside the strike's transaction with (key, message, cooldown_s): the nests app
# uses it to tell that requester's still-flying lists (requester.pranked). What a hook
# returns is ignored.
_strike_hooks: list[Callable[[str, str, int], object]] = []


def on_strike(hook: Callable[[str, str, int], object]) -> Callable[[str, str, int], object]:
    _strike_hooks.append(hook)
    return hook


def poster_key(*, requester: str = "", crow: str = "", owner: bool = False) -> str:
    """Strike keys keep requesters, crows and the owner apart: a requester named "Pepper"
    never shares strikes with the crow Pepper."""
    if owner:
        return OWNER_KEY
    if crow:
        return f"crow:{crow}"
    return f"requester:{requester}"


def _limit(kind: Kind) -> int:
    return settings.CROWS_LIST_RATE_PER_MIN if kind == "list" else settings.CROWS_NEST_POST_RATE_PER_MIN


# The owner's lists in a rolling minute: this many times a requester's. A person sending
# lists by hand never reaches it; a script stuck in a loop does.
OWNER_LIST_RATE_FACTOR = 6
OWNER_KEY = "owner"


def owner_limit(kind: Kind) -> int:
    return _limit(kind) * OWNER_LIST_RATE_FACTOR if kind == "list" else _limit(kind)


def _admit_owner(kind: Kind) -> None:
    """The owner's post: counted, or refused with a plain 429 (no strike, no prank)."""
    what = "lists" if kind == "list" else "messages"
    with transaction.atomic():
        lock_or_create(Poster, key=OWNER_KEY)
        now = timezone.now()
        window = Post.objects.filter(key=OWNER_KEY, kind=kind, at__gt=now - timedelta(minutes=1))
        limit = owner_limit(kind)
        if window.count() < limit:
            Post.objects.create(key=OWNER_KEY, kind=kind, at=now)
            return
        oldest = window.order_by("at").values_list("at", flat=True).first()
        wait = max(1, int(((oldest or now) + timedelta(minutes=1) - now).total_seconds() + 0.999))
    raise RateLimited(
        f"You sent {limit} {what} in the last minute, the most one minute takes. The next one fits in {wait} s.",
        cooldown_s=wait,
    )


def _lock_poster(cursor: Any, key: str) -> None:
    """Lock the poster's row until the commit, creating it on the poster's first post, in
    one statement: ON CONFLICT DO UPDATE locks the row it finds (no read that misses, no
    savepoint around a racing insert)."""
    poster = connection.ops.quote_name(Poster._meta.db_table)
    cursor.execute(
        f'INSERT INTO {poster} ("key") VALUES (%s) ON CONFLICT ("key") DO UPDATE SET "key" = EXCLUDED."key"', [key]
    )


def admit_owner_post(kind: Kind) -> None:
    """The owner's post counted in the caller's transaction, which stores the post, or
    refused with the plain 429 of `_admit_owner` (the caller's transaction then rolls
    back, and nothing of the post is stored).

    The owner earns no strike, so a refusal writes nothing and may share the post's
    rollback: the count is one `INSERT … SELECT … WHERE <fewer than the limit in the
    minute>` in the post's own transaction, instead of a transaction of its own before
    it. On SQLite the transaction's write lock, held from BEGIN, serialises admissions;
    on PostgreSQL the owner's poster row is locked first (created on the first post), as
    `_admit_owner` does, so two posts at once in two rooms cannot both take the minute's
    last place."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("admit_owner_post() must run inside the post's transaction")
    now = timezone.now()
    since = now - timedelta(minutes=1)
    at = Post._meta.get_field("at")
    quote = connection.ops.quote_name
    post = quote(Post._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            _lock_poster(cursor, OWNER_KEY)
        cursor.execute(
            f'INSERT INTO {post} ("key", "kind", "at") SELECT %s, %s, %s'
            f' WHERE (SELECT COUNT(*) FROM {post} WHERE "key" = %s AND "kind" = %s AND "at" > %s) < %s RETURNING "id"',
            [OWNER_KEY, kind, at.get_db_prep_value(now, connection), OWNER_KEY, kind,
             at.get_db_prep_value(since, connection), owner_limit(kind)],
        )
        if cursor.fetchone() is not None:
            return
    what = "lists" if kind == "list" else "messages"
    oldest = Post.objects.filter(key=OWNER_KEY, kind=kind, at__gt=since).order_by("at").values_list("at", flat=True).first()
    wait = max(1, int(((oldest or now) + timedelta(minutes=1) - now).total_seconds() + 0.999))
    raise RateLimited(
        f"You sent {owner_limit(kind)} {what} in the last minute, the most one minute takes. The next one fits in {wait} s.",
        cooldown_s=wait,
    )


# A cooldown doubles with each strike within a day (docs/LISTS.md, 429), up to a day: strikes
# older than that no longer count, and unbounded doubling would soon pass any date (the
# admin's Lift cooldown leaves the strikes counted, so they can pile up within a day).
MAX_COOLDOWN_S = 86_400


def prank_cooldown_s(earlier: int) -> int:
    """The cooldown of a strike after `earlier` strikes within the last day."""
    base = settings.CROWS_PRANK_COOLDOWN_S
    cap = max(base, MAX_COOLDOWN_S)
    # 2 ** cap.bit_length() > cap: the exponent is bounded and still reaches the cap.
    return min(base * 2 ** min(earlier, cap.bit_length()), cap)


def _counted_in_one(cursor: Any, key: str, kind: Kind) -> bool:
    """The usual case in one statement, under the poster's lock: no strike cooling down
    and room in the minute, so the post is counted. False when either fails, and nothing
    is written: the caller then reads which, and strikes when it must."""
    now = timezone.now()
    prep = Post._meta.get_field("at").get_db_prep_value
    quote = connection.ops.quote_name
    post, strike = quote(Post._meta.db_table), quote(Strike._meta.db_table)
    cursor.execute(
        f'INSERT INTO {post} ("key", "kind", "at") SELECT %s, %s, %s'
        f' WHERE NOT EXISTS (SELECT 1 FROM {strike} WHERE "key" = %s AND "until" > %s)'
        f' AND (SELECT COUNT(*) FROM {post} WHERE "key" = %s AND "kind" = %s AND "at" > %s) < %s RETURNING "id"',
        [key, kind, prep(now, connection), key, prep(now, connection), key, kind,
         prep(now - timedelta(minutes=1), connection), _limit(kind)],
    )
    return cursor.fetchone() is not None


def admit_post(key: str, *, kind: Kind) -> None:
    """Count one post by `key`, or refuse it with RateLimited (after committing any strike).
    The rate is a rolling minute (docs/LISTS.md, 429): a post made as the cooldown ends,
    with the minute still full, is over the rate again and earns the next, doubled strike.

    Call it in its own transaction before the post's action, so the refusal and the post
    never share a rollback. The owner's posts go by the owner's own limit (module docstring)."""
    if key == OWNER_KEY:
        _admit_owner(kind)
        return
    refusal: RateLimited | None = None
    with transaction.atomic():
        # The poster's row serialises its admissions; created on its first post.
        with connection.cursor() as cursor:
            _lock_poster(cursor, key)
            if _counted_in_one(cursor, key, kind):
                return
        now = timezone.now()
        active = Strike.objects.filter(key=key, until__gt=now).order_by("-until").first()
        if active is not None:
            left = max(1, int((active.until - now).total_seconds() + 0.999))
            refusal = RateLimited(active.message.replace(str(active.cooldown_s), str(left)), cooldown_s=left)
        else:
            recent = Post.objects.filter(key=key, kind=kind, at__gt=now - timedelta(minutes=1)).count()
            if recent >= _limit(kind):
                earlier = Strike.objects.filter(key=key, at__gt=now - timedelta(days=1)).count()
                cooldown = prank_cooldown_s(earlier)
                message = PRANKS[earlier % len(PRANKS)].format(s=cooldown)
                Strike.objects.create(
                    key=key, kind=kind, cooldown_s=cooldown, at=now,
                    until=now + timedelta(seconds=cooldown), message=message,
                )
                for hook in _strike_hooks:
                    hook(key, message, cooldown)
                refusal = RateLimited(message, cooldown_s=cooldown)
            else:
                Post.objects.create(key=key, kind=kind, at=now)
    if refusal is not None:
        raise refusal
