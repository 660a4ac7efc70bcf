"""Counting what an operation asks of the database: statements, round trips, transactions.

Shared by the statement-budget tests (tests/nests/test_statement_budgets.py) and
bench/statements.py. Counts are exact and deterministic for a given code and database
(no timing), so a budget on them is a fair test on a busy machine.

What is counted, on the thread's `default` connection:
- statements: SQL statements that read or write rows. A query that carries several
  statements in one round trip (flock.db.save_fields on PostgreSQL) counts each of them.
  Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) is not a statement.
- savepoints: SAVEPOINT, RELEASE SAVEPOINT and ROLLBACK TO SAVEPOINT queries.
- transactions: commits and rollbacks of an outermost `atomic` block.
- autocommit: statements run outside any transaction.
- round trips: every query sent (a multi-statement query once), every savepoint query,
  and each transaction's BEGIN and COMMIT (on PostgreSQL psycopg sends BEGIN as its own
  query before a transaction's first statement; on SQLite Django sends it).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

_CONTROL = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|END)\b", re.IGNORECASE)
_SAVEPOINT = re.compile(r"^\s*(SAVEPOINT|RELEASE|ROLLBACK TO)\b", re.IGNORECASE)
_BEGIN = re.compile(r"^\s*BEGIN\b", re.IGNORECASE)
_PLACEHOLDERS = re.compile(r"\((?:%s|\?)(?:,\s*(?:%s|\?))+\)")
_ROWS = re.compile(r"(\(…\))(?:,\s*\(…\))+")


def shape(sql: str) -> str:
    """A statement with its lists of placeholders folded, so one shape counts once."""
    folded = _ROWS.sub(r"\1, …", _PLACEHOLDERS.sub("(…)", sql))
    return " ".join(folded.split())


@dataclass
class Counts:
    statements: int = 0
    queries: int = 0  # what was sent, a multi-statement query once
    savepoints: int = 0
    begins: int = 0  # BEGINs Django sent itself (SQLite)
    transactions: int = 0
    autocommit: int = 0
    shapes: Counter[str] = field(default_factory=Counter)
    sql: list[str] = field(default_factory=list)

    @property
    def round_trips(self) -> int:
        # PostgreSQL's BEGIN goes unseen by Django (psycopg sends it): one per transaction.
        begins = self.begins if connection.vendor != "postgresql" else self.transactions
        return self.queries + self.savepoints + begins + self.transactions

    def as_dict(self) -> dict[str, Any]:
        return {
            "statements": self.statements,
            "round_trips": self.round_trips,
            "transactions": self.transactions,
            "autocommit": self.autocommit,
            "savepoints": self.savepoints,
        }

    def top(self, n: int = 5) -> list[tuple[int, str]]:
        return [(count, text) for text, count in self.shapes.most_common(n)]


class StatementCounter:
    """Counts into `counts[segment]` (and "all"); `segment` is changed by `within`."""

    def __init__(self) -> None:
        self.counts: dict[str, Counts] = {"all": Counts()}
        self._segments: list[str] = []
        self.calls: Counter[str] = Counter()

    def _targets(self) -> list[Counts]:
        targets = [self.counts["all"]]
        for name in self._segments:
            targets.append(self.counts.setdefault(name, Counts()))
        return targets

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        text = str(sql)
        for counts in self._targets():
            counts.sql.append(text)
            if _BEGIN.match(text):
                counts.begins += 1
            elif _SAVEPOINT.match(text):
                counts.savepoints += 1
            elif not _CONTROL.match(text):
                parts = [p for p in text.split("; ") if p.strip()]
                counts.queries += 1
                counts.statements += len(parts)
                if not connection.in_atomic_block:
                    counts.autocommit += len(parts)
                for part in parts:
                    counts.shapes[shape(part)] += 1
        return execute(sql, params, many, context)

    def ended_transaction(self) -> None:
        for counts in self._targets():
            counts.transactions += 1

    @contextmanager
    def within(self, segment: str) -> Iterator[None]:
        self._segments.append(segment)
        self.calls[segment] += 1
        try:
            yield
        finally:
            self._segments.pop()


@contextmanager
def counting() -> Iterator[StatementCounter]:
    """Count everything the default connection runs in this block."""
    counter = StatementCounter()
    wrapper = connections[DEFAULT_DB_ALIAS]
    own = {name: wrapper.__dict__[name] for name in ("commit", "rollback") if name in wrapper.__dict__}
    real_commit, real_rollback = wrapper.commit, wrapper.rollback

    def commit() -> None:
        counter.ended_transaction()
        real_commit()

    def rollback() -> None:
        counter.ended_transaction()
        real_rollback()

    wrapper.commit, wrapper.rollback = commit, rollback  # type: ignore[method-assign]
    try:
        with wrapper.execute_wrapper(counter):
            yield counter
    finally:
        # Put back what was there: an enclosing count's hooks, or the class's methods.
        for name in ("commit", "rollback"):
            if name in own:
                setattr(wrapper, name, own[name])
            else:
                delattr(wrapper, name)


# -- the operations -------------------------------------------------------------------

# bench/lists.py's mix: solo, split and murder items.
LIST_ITEMS = [
    "write a haiku about crows",
    "draft the launch email for the beta",
    "fix the login bug on Safari and update the docs and email the team",
    "should we use postgres or sqlite?",
    "summarise last quarter's support tickets",
    "plan the team offsite for March",
    "research three vendors for error tracking and compare their prices",
    "which logo should we pick, the round one or the square one?",
    "write release notes for version 2.3",
    "clean up the sales spreadsheet",
]


def trust_the_flock() -> None:
    from flock.personas import TASK_TYPES
    from flock.queries import living_crows
    from trust.actions import seed_trust
    from trust.queries import FLOCK_HOLDER

    for holder in [FLOCK_HOLDER, *(c.name for c in living_crows())]:
        for task_type in TASK_TYPES:
            seed_trust(holder, task_type=task_type)


@contextmanager
def _segmented(counter: StatementCounter, module: Any, name: str, segment: str) -> Iterator[None]:
    real = getattr(module, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with counter.within(segment):
            return real(*args, **kwargs)

    setattr(module, name, wrapped)
    try:
        yield
    finally:
        setattr(module, name, real)


def measure_list(items: list[str] = LIST_ITEMS) -> tuple[StatementCounter, int]:
    """Post a list to a trusted flock and run its tasks inline to `list.finished`. Returns
    the counter (segments "take-off" and "landing" hold the flights' own transactions)
    and the number of flights."""
    from flock import worker
    from nests.actions import post_list
    from nests.actions.lists import flights
    from nests.models import TodoList

    with counting() as counter, _segmented(counter, flights, "launch_sortie", "take-off"), \
            _segmented(counter, flights, "land_sortie", "landing"):
        todo = post_list("\n".join(items), requester="ada")
        worker.run_pending()
    todo.refresh_from_db()
    assert todo.status == TodoList.Status.FINISHED, f"the list did not finish: {todo.status}"
    return counter, counter.calls["landing"]


def measure_owner_post(nest_id: str = "todo") -> tuple[StatementCounter, StatementCounter]:
    """One owner message in a nest: the action alone, then everything it queued."""
    from flock import worker
    from nests.actions import post_message

    with counting() as request:
        post_message(nest_id, author="owner", text="morning, all: what is on for today?")
    with counting() as after:
        worker.run_pending()
    return request, after


def measure_owner_verdict() -> StatementCounter:
    """The owner approves an untrusted Sentry's triage of a one-item list. A first list's
    triage is approved uncounted before it, so the one-off rows an answer creates (the
    flock's trust row for the task type, the nest's crew rotation) exist, as they do
    for every verdict after the first."""
    from flock import worker
    from nests.actions import post_list
    from trust.actions import record_owner_verdict
    from trust.models import Approval

    counter = StatementCounter()
    for first in (True, False):
        todo = post_list("write a haiku about crows", requester="ada")
        worker.run_pending()
        approval = Approval.objects.get(list_id=todo.list_id)
        with counting() as counted:
            record_owner_verdict(approval.item_id, target=approval.target, approve=True)
        if not first:
            counter = counted
        worker.run_pending()  # its flights, uncounted: they are no part of the verdict
    return counter


def measure_all() -> dict[str, Any]:
    """Every operation on the current database, in this order, as numbers, the five most
    frequent statements and (under "shapes") every statement's shape with its count."""
    verdict = measure_owner_verdict()  # before the flock is trusted: the Sentry asks
    post, after_post = measure_owner_post()
    trust_the_flock()
    # The verdict's list created the flock's one-off rows (the flight gate, the todo
    # nest's crew rotation), so the list is counted as every list after the first.
    listed, flights = measure_list()
    take_off, landing = listed.counts["take-off"], listed.counts["landing"]
    return {
        "vendor": connection.vendor,
        "list": {**listed.counts["all"].as_dict(), "flights": flights,
                 "top": listed.counts["all"].top()},
        "flight": {
            "take-off": take_off.as_dict(),
            "landing": landing.as_dict(),
            "statements per flight": round((take_off.statements + landing.statements) / flights, 1),
            "round trips per flight": round((take_off.round_trips + landing.round_trips) / flights, 1),
            "top": [(count, text) for text, count in (take_off.shapes + landing.shapes).most_common(5)],
        },
        "owner post": {**post.counts["all"].as_dict(), "with what it sets off": after_post.counts["all"].as_dict(),
                       "top": post.counts["all"].top()},
        "owner verdict": {**verdict.counts["all"].as_dict(), "top": verdict.counts["all"].top()},
        "shapes": {
            "list": dict(listed.counts["all"].shapes),
            "flight": dict(take_off.shapes + landing.shapes),
            "owner post": dict(post.counts["all"].shapes),
            "owner verdict": dict(verdict.counts["all"].shapes),
        },
    }
