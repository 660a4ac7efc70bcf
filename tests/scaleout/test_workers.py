"""Workers that scale and recover, on PostgreSQL: `manage.py db_worker` processes beside
daphne servers with the embedded worker off. A worker killed with SIGKILL mid-flight loses
its claim when its lease runs out, another worker runs the task again, and the list still
finishes with exactly one answer per item."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from tests.support.server import PYTHON, ROOT, LiveServer, base_env
from tests.support.services import (
    PG_ADMIN_URL,
    REDIS_HOST,
    REDIS_PORT,
    fresh_postgres_database,
    missing_postgres,
    missing_services,
    reachable,
)
from tests.support.sse import SSEClient

# Servers of one Redis hear each other's doorbells: tests on the shared Redis run one at a
# time (one pytest-xdist worker).
pytestmark = [pytest.mark.scaleout, pytest.mark.live, pytest.mark.xdist_group("shared-redis")]

_why = missing_postgres()
if _why:
    pytest.skip(_why, allow_module_level=True)

LEASE_S = 3
ITEMS = [
    "write a haiku about crows",
    "draft the launch email for the beta",
    "summarise last quarter's support tickets",
    "plan the team offsite for March",
    "write release notes for version 2.3",
]


class DbWorker:
    def __init__(self, env: dict[str, str], data: Path, name: str, threads: int = 4) -> None:
        self.name = name
        self.log_path = data / f"worker-{name}.log"
        self.proc = subprocess.Popen(
            [PYTHON, "manage.py", "db_worker", "--threads", str(threads), "--worker-id", name],
            cwd=ROOT, env=env, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT,
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=LEASE_S + 10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def shape(tmp_path_factory):
    with fresh_postgres_database() as url:
        env = {
            "DATABASE_URL": url,
            "CROWS_EMBEDDED_WORKER": "0",
            "CROWS_TASK_LEASE_S": str(LEASE_S),
            "CROWS_MOCK_LATENCY_MS": "400",
            "CROWS_STREAM_POLL_S": "0.3",
            "CROWS_WORKER_POLL_S": "0.3",
            "CROWS_LIST_RATE_PER_MIN": "100000",
            "CROWS_EXCHANGES_PER_TURN": "0",
            "CROWS_BANTER_WAIT_S": "2",
        }
        if reachable(REDIS_HOST, REDIS_PORT):
            env["REDIS_URL"] = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"
        data = tmp_path_factory.mktemp("pg-workers")
        full = base_env(CROWS_DATA_DIR=str(data), **env)
        subprocess.run(
            [PYTHON, "manage.py", "trust_seed", "--all"], cwd=ROOT, env=full, check=True, capture_output=True, timeout=600,
        )
        a = LiveServer(data, env=env).start(timeout=60)
        b = LiveServer(data, env=env).start(timeout=60)
        try:
            yield {"url": url, "env": full, "data": data, "servers": (a, b)}
        finally:
            a.stop()
            b.stop()


def _post_list(server: LiveServer, n_items: int, requester: str) -> str:
    text = "\n".join(f"- {ITEMS[k % len(ITEMS)]}" for k in range(n_items))
    r = server.post("/api/lists", {"text": text, "requester": requester})
    assert r.status_code == 202, r.text
    return r.json()["list_id"]


def _until_finished(client: SSEClient, timeout: float) -> list:
    frames = []
    deadline = time.monotonic() + timeout
    while not frames or frames[-1].event != "list.finished":
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"list never finished; got {[f.event for f in frames]}")
        try:
            frame = client.frames.get(timeout=left)
        except Exception:
            continue
        if frame.id is not None:
            frames.append(frame)
    return frames


def _assert_one_answer_per_item(frames: list) -> None:
    names = Counter(f.event for f in frames)
    (started,) = [f.data for f in frames if f.event == "list.started"]
    items = {i["item_id"] for i in started["items"]}
    answered = Counter(f.data["item_id"] for f in frames if f.event == "item.answered")
    skipped = Counter(f.data["item_id"] for f in frames if f.event == "item.skipped")
    assert set(answered) | set(skipped) == items
    assert all(c == 1 for c in (answered + skipped).values()), (answered, skipped)
    verdicts = Counter((f.data["item_id"], f.data["target"]) for f in frames if f.event == "verdict")
    assert all(c == 1 for c in verdicts.values()), verdicts
    flying = Counter((f.data["item_id"], f.data["crow"]) for f in frames if f.event == "crow.flying")
    landed = Counter((f.data["item_id"], f.data["crow"]) for f in frames if f.event == "crow.landed")
    assert flying == landed and set(flying.values()) <= {1}
    assert names["list.finished"] == 1
    ids = [f.id for f in frames]
    assert ids == sorted(set(ids))


def _assert_finishes_once_each(client: SSEClient, timeout: float) -> None:
    try:
        _assert_one_answer_per_item(_until_finished(client, timeout=timeout))
    finally:
        client.close()


def _running_tasks_of(url: str, worker: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id::text FROM django_tasks_database_dbtaskresult WHERE status = 'RUNNING'"
            " AND worker_ids::text LIKE %s",
            [f"%{worker}%"],
        ).fetchall()
    return [r[0] for r in rows]


def test_a_worker_killed_mid_flight_loses_its_claim_and_the_list_still_finishes(shape):
    a, _ = shape["servers"]
    doomed = DbWorker(shape["env"], shape["data"], "doomed")
    survivor = None
    try:
        time.sleep(1.5)  # the doomed worker starts first, so it claims the first steps
        list_id = _post_list(a, 4, "kill-test")
        stream = SSEClient(f"{a.url}/api/events?list_id={list_id}")
        deadline = time.monotonic() + 60
        held: list[str] = []
        while not held and time.monotonic() < deadline:
            held = _running_tasks_of(shape["url"], "doomed")
            time.sleep(0.05)
        assert held, "the doomed worker never took a task"
        doomed.kill()
        survivor = DbWorker(shape["env"], shape["data"], "survivor")
        frames = _until_finished(stream, timeout=90)
        stream.close()
        _assert_one_answer_per_item(frames)
        with psycopg.connect(shape["url"]) as conn:
            rerun = conn.execute(
                "SELECT status, worker_ids FROM django_tasks_database_dbtaskresult WHERE id::text = ANY(%s)",
                [held],
            ).fetchall()
        # Every task the dead worker held ran again, on the survivor, and finished.
        for status, workers in rerun:
            assert status == "SUCCESSFUL" and any(w.startswith("survivor") for w in workers), (status, workers)
            assert any(w.startswith("doomed") for w in workers)
    finally:
        doomed.kill()
        if survivor is not None:
            survivor.stop()


def test_two_servers_and_two_workers_finish_lists_posted_on_either(shape):
    why = missing_services()
    if why:
        pytest.skip(why)
    a, b = shape["servers"]
    workers = [DbWorker(shape["env"], shape["data"], f"pair{n}") for n in range(2)]
    try:
        on_a = _post_list(a, 3, "pair-a")
        on_b = _post_list(b, 3, "pair-b")
        # Each list is watched through the other server.
        for server, list_id in ((b, on_a), (a, on_b)):
            _assert_finishes_once_each(SSEClient(f"{server.url}/api/events?list_id={list_id}"), timeout=90)
    finally:
        for w in workers:
            w.stop()


def test_the_flight_cap_holds_while_workers_take_off_and_land_side_by_side(shape):
    """The flight gate is taken last and held only to the commit (nests/actions/lists/
    flights.py): with 16 threads in two processes flying four lists at once, the flock
    never has more than CROWS_MAX_IN_FLIGHT (6) crows in the air, reaches that many, ends
    every list, and PostgreSQL reports no deadlock."""
    a, b = shape["servers"]
    workers = [DbWorker(shape["env"], shape["data"], f"gate{n}", threads=8) for n in range(2)]
    seen: list[int] = []
    try:
        time.sleep(1.0)
        list_ids = [_post_list((a, b)[n % 2], 5, f"gate-{n}") for n in range(4)]
        clients = {list_id: SSEClient(f"{a.url}/api/events?list_id={list_id}") for list_id in list_ids}
        with psycopg.connect(shape["url"], autocommit=True) as conn:
            deadline = time.monotonic() + 120
            finished = 0
            while finished < len(list_ids):
                assert time.monotonic() < deadline, f"lists not finished; flying counts seen: {sorted(set(seen))}"
                seen.append(conn.execute("SELECT count(*) FROM nests_sortie WHERE status = 'flying'").fetchone()[0])
                finished = conn.execute(
                    "SELECT count(*) FROM nests_todolist WHERE status = 'finished' AND list_id = ANY(%s)",
                    [list_ids],
                ).fetchone()[0]
                time.sleep(0.01)
        for client in clients.values():
            _assert_finishes_once_each(client, timeout=30)
    finally:
        for w in workers:
            w.stop()
    assert max(seen) <= 6, f"more crows in the air than CROWS_MAX_IN_FLIGHT: {max(seen)}"
    assert max(seen) == 6, f"the flock never filled its slots (most in the air: {max(seen)})"
    logs = "".join(w.log_path.read_text(errors="replace") for w in workers)
    assert "deadlock detected" not in logs


def _fly_tasks_running(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status = 'RUNNING'"
            " AND task_path = 'nests.tasks.fly_sortie_task'"
        ).fetchone()[0]


# Longer than a connection pool waits for a connection (20 s).
OUTAGE_S = 24


def test_a_worker_whose_database_goes_away_mid_flight_still_finishes_the_list(shape):
    # As a PostgreSQL restart or a failover does to a live worker: the connections it
    # holds die while its crows think, and new ones are refused for longer than its pool
    # waits. The worker must survive it, and the list finish with one answer per item.
    a, _ = shape["servers"]
    env = {**shape["env"], "PGAPPNAME": "crows-cut-worker", "CROWS_MOCK_LATENCY_MS": "1500"}
    worker = DbWorker(env, shape["data"], "cut")
    try:
        time.sleep(1.5)
        list_id = _post_list(a, 3, "cut-test")
        stream = SSEClient(f"{a.url}/api/events?list_id={list_id}")
        deadline = time.monotonic() + 60
        while _fly_tasks_running(shape["url"]) == 0:
            assert time.monotonic() < deadline, "the worker never took off"
            time.sleep(0.05)
        time.sleep(0.3)  # the crows are thinking now (1.5 s each)
        database = shape["url"].rsplit("/", 1)[1]
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
            try:
                cut = admin.execute(
                    "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = 'crows-cut-worker') AS t"
                ).fetchone()[0]
                time.sleep(OUTAGE_S)
            finally:
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
        assert cut >= 1
        _assert_finishes_once_each(stream, timeout=90)
        assert worker.proc.poll() is None, "the worker died instead of recovering"
    finally:
        worker.stop()
