"""The cast and the machinery every test shares.

- `owner`: the human; may post anywhere and answer approvals.
- `capture_events`: records the events an action emits, for asserting exact payloads.
- `live_server`: a real daphne on loopback, with its own migrated SQLite database, as a
  user runs it; stop() and start() again keep its port and data.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import JEV_TEST_CACHE, JEV_WARMED_ENV, LiveServer, SqliteTemplate, ensure_jev_cache

os.environ.setdefault("CROWS_NO_WORKER_ON_IMPORT", "1")


def pytest_configure(config: pytest.Config) -> None:
    """Jev's models are the run's one expensive shared thing: the tests in this process read
    them from the same cache as every live server (trained once per run, keyed by the data's
    hash), and under pytest-xdist the controller trains it before any worker starts, so two
    workers never train the same models side by side."""
    from django.conf import settings

    settings.CROWS_JEV_CACHE_DIR = str(JEV_TEST_CACHE)
    is_xdist_controller = not hasattr(config, "workerinput") and bool(config.getoption("numprocesses", None))
    if is_xdist_controller:
        ensure_jev_cache()
        os.environ[JEV_WARMED_ENV] = str(JEV_TEST_CACHE)


# Where the run's time goes: real servers, workers and commands (docs/TESTING.md). Collected
# first, so pytest-xdist's workers start on the long tests and finish on the quick in-process
# ones instead of one worker running a long tail alone.
SLOW_FIRST = ("scaleout", "live", "stream", "contract", "api", "security", "commands", "test_settings.py", "flock")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent

    def rank(item: pytest.Item) -> int:
        area = Path(str(item.fspath)).relative_to(here).parts[0]
        return SLOW_FIRST.index(area) if area in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: each module's tests keep their order


@pytest.fixture
def owner() -> str:
    return "owner"


class CapturedEvents(list):
    def names(self) -> list[str]:
        return [e["name"] for e in self]

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e["payload"] for e in self if e["name"] == name]


@pytest.fixture
def capture_events(db) -> Callable[[], Any]:
    """`with capture_events() as events:` collects every event row written inside."""
    from flock.models import Event

    @contextmanager
    def capture() -> Iterator[CapturedEvents]:
        before = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
        events = CapturedEvents()
        yield events
        for row in Event.objects.filter(id__gt=before).order_by("id"):
            events.append({"id": row.id, "name": row.name, "payload": row.payload})

    return capture


@pytest.fixture(scope="session")
def jev_cache() -> Path:
    """The warm Jev cache every live server of the run reads (CROWS_JEV_CACHE_DIR)."""
    ensure_jev_cache()
    return JEV_TEST_CACHE


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> SqliteTemplate:
    return SqliteTemplate(tmp_path_factory.mktemp("crows-db"))


@pytest.fixture
def live_server_factory(sqlite_template: SqliteTemplate, tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    servers: list[LiveServer] = []

    def make(env: dict[str, str] | None = None, data_dir: Path | None = None, **kw: Any) -> LiveServer:
        directory = data_dir or sqlite_template.fresh_dir(f"{tmp_path.name}-{len(servers)}")
        server = LiveServer(directory, env=env, **kw)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(live_server_factory: Callable[..., LiveServer]) -> LiveServer:
    return live_server_factory().start()


@pytest.fixture(autouse=True)
def no_flights_left_in_the_air() -> Iterator[None]:
    """A test that takes a sortie off and never lands it leaves it in this process's
    in-air registry; the next test's database may reuse its id."""
    yield
    from nests.actions.lists.flights import IN_AIR

    IN_AIR.clear()


@pytest.fixture(autouse=True)
def no_wrong_tokens_remembered() -> Iterator[None]:
    """Wrong owner tokens are counted per client address in the process
    (crows_site/logins.py); every test client is 127.0.0.1, so one test's guesses must not
    be the next test's 429."""
    yield
    import sys

    logins = sys.modules.get("crows_site.logins")
    if logins is not None:
        logins.failures.clear()
