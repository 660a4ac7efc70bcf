"""Nest budgets (docs/CHATROOM.md).

Each owner message grants the room CROWS_EXCHANGES_PER_TURN crow invocations; unused ones
do not carry over. Each room also has CROWS_NEST_TOKEN_BUDGET tokens per day. Every crow
invocation takes one exchange, whoever caused it, so a chain of crows calling crows ends
when the turn's exchanges do. Wind-down is said in the room, once per turn (exchanges) or
per day (tokens), as a harness message, not only put into prompts.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from flock.db import lock_or_create
from flock.errors import BadInput
from flock.events import lock_event_log
from flock.vocab import HARNESS, OWNER
from nests.actions.chat.queue import enqueue_invocation
from nests.actions.chat.room import say
from nests.models import Invocation, Nest, NestBudget, NestMessage

# Reads of a budget live in nests.queries; the budget API reads budget_view/read_budget here too.
from nests.queries import budget_day, budget_view, read_budget, roll_day, tokens_allowed, tokens_left  # noqa: F401

# "Running low" means a quarter of the turn's exchanges, or a tenth of the day's tokens.
LOW_EXCHANGES_SHARE = 0.25
LOW_TOKENS_SHARE = 0.10
TOP_UP_EXCHANGES_MAX = 1000
TOP_UP_TOKENS_MAX = 10_000_000
BUDGET_SPENT = "budget spent"
TOKENS_SPENT = "token budget spent"
# A turn that granted nothing (CROWS_EXCHANGES_PER_TURN=0): crows are off, and nothing
# they were asked waits for the next turn.
CROWS_OFF = "crows are switched off"
STALLED_ERRORS = (BUDGET_SPENT, TOKENS_SPENT, CROWS_OFF)


def locked_budget(nest: Nest, *, room_locked: bool = False) -> NestBudget:
    """The room's budget row, locked for the caller's transaction, rolled to today.

    The room's own row is locked first, always: post_message holds it when it spends an
    exchange, and a notice posted while the budget is locked takes it too, so taking the
    two in one order everywhere keeps PostgreSQL from deadlocking on them. A caller that
    already holds the room's lock in this transaction says so with `room_locked`."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("locked_budget() must run inside transaction.atomic")
    if not room_locked:
        Nest.objects.select_for_update().filter(pk=nest.pk).first()
    budget = lock_or_create(NestBudget, nest=nest)
    roll_day(budget)
    return budget


def budget_note(budget: NestBudget) -> str:
    """One line every crow prompt carries, so crows see what the owner sees."""
    return (
        f"{budget.exchanges_left} of {budget.exchanges_granted} crow exchanges left this turn; "
        f"{tokens_left(budget):,} of {tokens_allowed(budget):,} tokens left today in this room. "
        "Be brief when either runs low."
    )


# The owner's turn in one statement: the room's budget row created on its first turn,
# rolled to today on the day's first, and granted a fresh turn, handed back as written.
_GRANT_TURN = """
INSERT INTO {t} (nest_id, turn, exchanges_granted, exchanges_left, day, tokens_used, tokens_extra,
                 low_announced_turn, spent_announced_turn, tokens_low_announced, tokens_spent_announced)
VALUES (%s, 1, %s, %s, %s, 0, 0, 0, 0, NULL, NULL)
ON CONFLICT (nest_id) DO UPDATE SET
    turn = {t}.turn + 1,
    exchanges_granted = EXCLUDED.exchanges_granted,
    exchanges_left = EXCLUDED.exchanges_left,
    tokens_used = CASE WHEN {t}.day = EXCLUDED.day THEN {t}.tokens_used ELSE 0 END,
    tokens_extra = CASE WHEN {t}.day = EXCLUDED.day THEN {t}.tokens_extra ELSE 0 END,
    day = EXCLUDED.day
RETURNING *
"""


def grant_turn(nest: Nest, *, room_locked: bool = False) -> NestBudget:
    """The owner spoke: a fresh turn of exchanges (the old turn's leftovers lapse).
    Returns the room's budget row as granted, locked until the commit.

    Every owner post lands here, so the grant is one `INSERT … ON CONFLICT DO UPDATE …
    RETURNING` that creates the row on the room's first turn and rolls it to today on the
    day's first (what `locked_budget` and `roll_day` do the long way), instead of a read
    and a save of the whole row (docs/PERFORMANCE.md). The room's row is locked first, as
    `locked_budget` says; a caller that holds it says so with `room_locked`."""
    if not room_locked:
        Nest.objects.select_for_update().filter(pk=nest.pk).first()
    per_turn = settings.CROWS_EXCHANGES_PER_TURN
    day = NestBudget._meta.get_field("day").get_db_prep_value(budget_day(), connection)
    sql = _GRANT_TURN.format(t=connection.ops.quote_name(NestBudget._meta.db_table))
    return list(NestBudget.objects.raw(sql, [nest.pk, per_turn, per_turn, day]))[0]


def can_spend(budget: NestBudget) -> bool:
    return budget.exchanges_left > 0 and tokens_left(budget) > 0


def take_exchange(
    nest: Nest, *, room_locked: bool = False, budget: NestBudget | None = None
) -> tuple[NestBudget, bool]:
    """Spend one exchange for one crow invocation, if both budgets allow it. `budget`: the
    room's row as the caller locked it in this transaction (not read again)."""
    if budget is None:
        budget = locked_budget(nest, room_locked=room_locked)
    if not can_spend(budget):
        budget.save()
        return budget, False
    budget.exchanges_left -= 1
    budget.save()
    return budget, True


# A brain call's tokens added to the room's count in one statement, the row rolled to
# today on the way (as `roll_day` does) and handed back as written. On PostgreSQL the
# room's row is locked first, in the same statement (`locked_budget` says why): the
# subquery that names the row to update runs before the update takes its row.
_CHARGE_TOKENS = """
{room}UPDATE {t} SET
    tokens_used = CASE WHEN day = %s THEN tokens_used ELSE 0 END + %s,
    tokens_extra = CASE WHEN day = %s THEN tokens_extra ELSE 0 END,
    day = %s
WHERE nest_id = {nest}
RETURNING *
"""


def charge_tokens(nest: Nest, tokens: int) -> NestBudget:
    """Add a brain call's tokens to today's count (after the call: its size is known then)."""
    day = NestBudget._meta.get_field("day").get_db_prep_value(budget_day(), connection)
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(Nest._meta.db_table)
        room, pk = f"WITH room AS (SELECT id FROM {table} WHERE id = %s FOR UPDATE) ", "(SELECT id FROM room)"
    else:
        room, pk = "", "%s"  # SQLite: the transaction's write lock, held from BEGIN
    sql = _CHARGE_TOKENS.format(room=room, t=connection.ops.quote_name(NestBudget._meta.db_table), nest=pk)
    params: list[object] = [nest.pk] if room else []
    params += [day, max(0, int(tokens)), day, day]
    if not room:
        params.append(nest.pk)
    with transaction.atomic():
        lock_event_log()
        rows = list(NestBudget.objects.raw(sql, params))
        if rows:
            budget = rows[0]
        else:
            # A room whose budget row does not exist yet (no turn granted): the long way.
            budget = locked_budget(nest)
            budget.tokens_used += max(0, int(tokens))
            budget.save()
        announce_wind_down(nest, budget)
    return budget


def _announce(nest: Nest, text: str) -> None:
    # A harness notice: nothing reacts to it, so it is said straight away.
    say(nest, author=HARNESS, text=text)


def announce_wind_down(nest: Nest, budget: NestBudget) -> None:
    """Say in the room when a budget runs low, once per turn or day; call with it locked."""
    if budget.exchanges_granted > 0 and budget.low_announced_turn != budget.turn:
        low = max(1, math.floor(budget.exchanges_granted * LOW_EXCHANGES_SHARE))
        if 0 < budget.exchanges_left <= low:
            budget.low_announced_turn = budget.turn
            budget.save(update_fields=["low_announced_turn"])
            _announce(
                nest,
                f"Wind-down: {budget.exchanges_left} of {budget.exchanges_granted} crow exchanges "
                "left this turn. Crows, wrap up and deliver what you have.",
            )
    allowed = tokens_allowed(budget)
    left = tokens_left(budget)
    if allowed > 0 and 0 < left <= allowed * LOW_TOKENS_SHARE and budget.tokens_low_announced != budget.day:
        budget.tokens_low_announced = budget.day
        budget.save(update_fields=["tokens_low_announced"])
        _announce(
            nest,
            f"Wind-down: {left:,} of {allowed:,} tokens left today in this room. Keep it short.",
        )


def announce_spent(nest: Nest, budget: NestBudget, *, tokens: bool = False) -> None:
    """Say once that crows are resting because a budget is spent; call with it locked.
    `tokens`: a crow's call was refused for the day's tokens, though a few may be left
    (too few for its prompt and a reply).

    A turn that granted nothing (CROWS_EXCHANGES_PER_TURN=0: crows switched off) says
    nothing, so a room used only by people is not filled with notices."""
    left = tokens_left(budget)
    if (left <= 0 or tokens) and tokens_allowed(budget) > 0:
        if budget.tokens_spent_announced != budget.day:
            budget.tokens_spent_announced = budget.day
            budget.save(update_fields=["tokens_spent_announced"])
            spent = (
                f"all {tokens_allowed(budget):,} tokens for today are used in this room"
                if left <= 0
                else f"{left:,} of {tokens_allowed(budget):,} tokens are left today in this room, too few for a crow's call"
            )
            _announce(nest, f"Budget spent: {spent}. Crows rest until tomorrow or until the owner tops up the budget.")
        return
    if budget.exchanges_granted > 0 and budget.spent_announced_turn != budget.turn:
        budget.spent_announced_turn = budget.turn
        budget.save(update_fields=["spent_announced_turn"])
        _announce(
            nest,
            f"Budget spent: all {budget.exchanges_granted} crow exchanges of this turn are used. "
            "Crows rest until the owner posts again or tops up the budget.",
        )


def _amount(value: object, name: str, maximum: int) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{name} must be a whole number")
    if not 1 <= value <= maximum:
        raise BadInput(f"{name} must be between 1 and {maximum:,}, got {value}")
    return value


def top_up_budget(nest: Nest, *, exchanges: object = None, tokens: object = None) -> NestBudget:
    """The owner adds exchanges to this turn and/or tokens to today, and the room hears it.

    A top-up is not an owner message: it does not start a new turn, so the crows pick up
    where the budget stopped them only when something new is posted."""
    extra_exchanges = _amount(exchanges, "exchanges", TOP_UP_EXCHANGES_MAX)
    extra_tokens = _amount(tokens, "tokens", TOP_UP_TOKENS_MAX)
    if not extra_exchanges and not extra_tokens:
        raise BadInput("give exchanges and/or tokens to add")
    with transaction.atomic():
        lock_event_log()
        budget = locked_budget(nest)
        budget.exchanges_granted += extra_exchanges
        budget.exchanges_left += extra_exchanges
        budget.tokens_extra += extra_tokens
        # A topped-up budget may run low (and out) again, and should say so again.
        if extra_exchanges:
            budget.low_announced_turn = budget.spent_announced_turn = 0
        if extra_tokens:
            budget.tokens_low_announced = budget.tokens_spent_announced = None
        budget.save()
        added = " and ".join(
            part
            for part in (
                f"{extra_exchanges} exchanges" if extra_exchanges else "",
                f"{extra_tokens:,} tokens" if extra_tokens else "",
            )
            if part
        )
        _announce(
            nest,
            f"The owner topped up this room: +{added}. Now {budget.exchanges_left} exchanges left "
            f"this turn and {tokens_left(budget):,} tokens left today.",
        )
        _resume_stalled(nest, budget)
    return budget


def _resume_stalled(nest: Nest, budget: NestBudget) -> None:
    """Invocations this turn that the spent budget stopped, and those that wait for a turn
    since an earlier one, run now: a top-up picks the conversation up where it stopped."""
    stalled = Invocation.objects.filter(nest=nest, turn=budget.turn, status=Invocation.Status.SKIPPED, error__in=STALLED_ERRORS)
    resume_waiting(nest, budget, list((stalled | waiting_for_a_turn(nest)).order_by("id")))


def waiting_for_a_turn(nest: Nest) -> QuerySet[Invocation]:
    """Crows a spent turn did not invoke: each answers when the room next has a turn
    (docs/CHATROOM.md, "Budgets and the loop guard")."""
    return Invocation.objects.filter(nest=nest, status=Invocation.Status.SKIPPED, error=BUDGET_SPENT).order_by("id")


def resume_waiting(nest: Nest, budget: NestBudget, invocations: list[Invocation]) -> list[Invocation]:
    """Queue stalled invocations, oldest first, as far as the budget goes (each spends an
    exchange of this turn). Call with the budget locked; it is saved."""
    resumed = []
    for invocation in invocations:
        if budget.exchanges_left <= 0 or tokens_left(budget) <= 0:
            break
        budget.exchanges_left -= 1
        invocation.status = Invocation.Status.QUEUED
        invocation.error = ""
        invocation.turn = budget.turn
        invocation.save(update_fields=["status", "error", "turn"])
        enqueue_invocation(invocation.id)
        resumed.append(invocation)
    budget.save()
    return resumed


def stalled_notice(budget: NestBudget, *, crow: str, message: NestMessage) -> str:
    """The harness's word on a crow the spent turn did not invoke: who, on what, and how
    the owner gives the room a turn. Marks the turn's spent budget as announced."""
    budget.spent_announced_turn = budget.turn
    budget.save(update_fields=["spent_announced_turn"])
    return (
        f"Budget spent: all {budget.exchanges_granted} crow exchanges of this turn are used, so {crow} was not "
        f"invoked for {message.msg_id}. It stays open, and {crow} answers when the room next has a turn: "
        f"@{OWNER}, post again, or top up the budget."
    )


def waits_for_a_turn(invocation: Invocation) -> bool:
    """Whether a spent turn stopped this invocation, which then runs on the next turn."""
    return invocation.status == Invocation.Status.SKIPPED and invocation.error == BUDGET_SPENT
