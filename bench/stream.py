"""Stream benchmark: so-many-crows' SSE stream beside a bare-Channels baseline, same run.

    .venv/bin/python bench/stream.py [--quick] [--json out.json] [--keep]

Starts real daphne servers on 127.0.0.1, each on its own freshly migrated SQLite copy in a
temp dir: the app (`crows_site.asgi`) and the baseline (`bench/baseline_asgi.py`: stock
AsyncHttpConsumer + stock InMemoryChannelLayer groups, same Django settings). All clients
are raw asyncio sockets in this one process, which shares the 2 cores with the servers.
Each server is measured only once it is quiet (start-up work such as model loading done).

A third server, the *lean* baseline (the same baseline app with BENCH_LEAN_LAYER=1: an
in-process layer without the stock InMemoryChannelLayer's per-send cost), and a fourth,
django-eventstream (5 below), join phases 1 and 2 and take their turns in the same rounds;
replay and idle streams do not touch the layer, so the lean baseline skips them.

Measures, for the servers, and prints crows, baseline, crows/baseline, lean, crows/lean:
1. fan-out latency p50/p99 to 100 and 1,000 subscribers of /api/events?nest_id=todo: the
   time from just before a POST of an owner message to each subscriber seeing its text,
   and the server CPU time per round (steadier than latency on a shared machine);
2. POST throughput with 10 concurrent keep-alive posters, 0 and 100 subscribers;
3. idle streams held and server RSS growth per stream at 1,000 and (not --quick) 5,000;
4. replay: connect with since=0 until the 10,000th stored event has arrived (on the
   servers of 3, once their streams are closed; see _stream_servers.FILL_EVENTS for how
   the 10,000 events are made).
5. django-eventstream (5.3.4, the standard Django SSE library), installed by the bench into
   its own venv (.data/bench-venvs/eventstream, once) and served by daphne from
   bench/eventstream_app on the same paths: fan-out p50/p99 at 100 and 1,000, memory per
   idle stream, replay of 10,000 stored events (DjangoModelStorage); and, for it and for
   the app, events lost and duplicated when 3 readers drop and resume with Last-Event-ID
   at random moments while 4 writers post 25 messages each (--no-eventstream skips 5).
Crows and baseline rounds alternate, so a machine busy with something else hurts both.
Not part of the test suite. Loopback only; every loop is bounded; every server it started
is stopped on exit, Ctrl+C or error. Figures and findings: docs/PERFORMANCE.md, "Stream".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _eventstream as _es  # noqa: E402
from _stream_clients import Poster, SSEClient, Watch, close_all, open_many, open_sse, percentile  # noqa: E402
from _stream_servers import (  # noqa: E402
    BASELINE_APP,
    CROWS_APP,
    Server,
    copy_db,
    fill_events,
    migrate,
)

SUB_PATH = "/api/events?nest_id=todo"
REPLAY_PATH = "/api/events?nest_id=todo&since=0"
POST_PATH = "/api/nests/todo/messages"
REPLAY_EVENTS = 10_000
TARGET_FANOUT_P99_MS = 250.0
TARGET_REPLAY_MS = 150.0
TARGET_IDLE_STREAMS = 5_000
TARGET_IDLE_KIB = 40.0


@dataclass
class Profile:
    fanout_rounds: int  # per subscriber count; --quick runs fewer at 1,000 (the baseline is slow there)
    fanout_spacing_s: float
    throughput_window_s: float  # per server and subscriber count, split into two alternating halves
    replay_runs: int
    idle_counts: tuple[int, ...]
    fanout_rounds_1000: int | None = None
    warmup_rounds: int = 2

    def rounds(self, n: int) -> int:
        return self.fanout_rounds_1000 if (n >= 1_000 and self.fanout_rounds_1000) else self.fanout_rounds


FULL = Profile(
    fanout_rounds=30,
    fanout_spacing_s=0.25,
    throughput_window_s=6.0,
    replay_runs=7,
    idle_counts=(1_000, 5_000),
)
QUICK = Profile(
    fanout_rounds=8,
    fanout_spacing_s=0.1,
    throughput_window_s=1.2,
    replay_runs=3,
    idle_counts=(1_000,),
    fanout_rounds_1000=5,
)


@dataclass
class Row:
    metric: str
    crows: float | None
    baseline: float | None
    unit: str
    target: str = ""
    met: bool | None = None
    note: str = ""
    lean: float | None = None  # the lean bare-Channels baseline, where the layer matters
    es: float | None = None  # django-eventstream


def say(text: str) -> None:
    print(text, flush=True)


def body_for(text: str) -> bytes:
    return json.dumps({"author": "owner", "text": text}).encode()


# -- 1. fan-out ------------------------------------------------------------------------------


async def fanout(servers: dict[str, Server], n: int, prof: Profile) -> dict[str, dict[str, float]]:
    watches = {name: Watch() for name in servers}
    clients: dict[str, list[SSEClient]] = {}
    started = time.perf_counter()
    for name, server in servers.items():
        ok, errors = await open_many(server.port, SUB_PATH, n, watch=watches[name])
        clients[name] = ok
        if errors:
            await close_all([c for cs in clients.values() for c in cs])
            raise RuntimeError(f"{name}: {len(errors)} of {n} subscribers failed, first: {errors[0]!r}")
    say(f"  {n} subscribers on each server in {time.perf_counter() - started:.1f} s")
    await asyncio.sleep(1.0)  # let every stream finish its (short) replay and go live
    posters = {name: Poster(server.port) for name, server in servers.items()}
    latencies: dict[str, list[float]] = {name: [] for name in servers}
    missed = {name: 0 for name in servers}
    round_max: dict[str, list[float]] = {name: [] for name in servers}
    tag = random.randrange(16**6)
    cpu: dict[str, float] = {}
    try:
        rounds = prof.rounds(n)
        for i in range(-prof.warmup_rounds, rounds):  # unrecorded warm-up rounds first
            if i == 0:
                cpu = {name: server.cpu_s() for name, server in servers.items()}
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for name in order:
                watch = watches[name]
                marker = f"fanout-{tag:06x}-{n}-{name}-{i}"
                watch.arm(marker.encode(), len(clients[name]))
                t0 = time.perf_counter()
                status = await posters[name].post(POST_PATH, body_for(marker))
                if status != 201:
                    raise RuntimeError(f"{name}: POST answered {status}")
                assert watch.done is not None
                try:
                    await asyncio.wait_for(asyncio.shield(watch.done), timeout=10)
                except TimeoutError:
                    pass
                arrivals = watch.disarm()
                if i >= 0:
                    latencies[name].extend((t - t0) * 1000 for t in arrivals.values())
                    missed[name] += len(clients[name]) - len(arrivals)
                    round_max[name].append(round((max(arrivals.values()) - t0) * 1000, 1) if arrivals else -1)
                await asyncio.sleep(prof.fanout_spacing_s * random.uniform(1.0, 1.5))
        # Server CPU per round (the POST, the emit and the fan-out), measured over all the
        # recorded rounds: less sensitive than latency to other work on a shared machine.
        cpu = {name: (server.cpu_s() - cpu[name]) * 1000 / rounds for name, server in servers.items()}
    finally:
        for poster in posters.values():
            poster.close()
        await close_all([c for cs in clients.values() for c in cs])
    out = {}
    for name, values in latencies.items():
        out[name] = {
            "cpu_ms": cpu[name],
            "p50": percentile(values, 50) if values else float("nan"),
            "p99": percentile(values, 99) if values else float("nan"),
            "max": max(values) if values else float("nan"),
            "samples": len(values),
            "missed": missed[name],
            "round_max_ms": round_max[name],
        }
        say(
            f"  {name:8} {n:5} subs: p50 {out[name]['p50']:7.1f} ms  p99 {out[name]['p99']:7.1f} ms  "
            f"max {out[name]['max']:7.1f} ms  server CPU {cpu[name]:6.1f} ms/post  "
            f"({len(values)} arrivals, {missed[name]} missed)"
        )
    return out


# -- 2. emit throughput ----------------------------------------------------------------------


async def post_window(
    server: Server, seconds: float, label: str, concurrency: int = 10
) -> tuple[int, int, float]:
    posters = [Poster(server.port) for _ in range(concurrency)]
    done = errors = 0
    deadline = time.perf_counter() + seconds

    async def worker(k: int) -> None:
        nonlocal done, errors
        i = 0
        while time.perf_counter() < deadline:
            i += 1
            try:
                status = await posters[k].post(POST_PATH, body_for(f"{label}-{k}-{i}"))
            except (OSError, asyncio.IncompleteReadError, TimeoutError):
                posters[k].close()
                status = -1
            if status == 201:
                done += 1
            else:
                errors += 1

    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(worker(k) for k in range(concurrency)))
    finally:
        for poster in posters:
            poster.close()
    return done, errors, time.perf_counter() - t0


async def throughput(servers: dict[str, Server], subs: int, prof: Profile) -> dict[str, dict[str, float]]:
    clients: list[SSEClient] = []
    for server in servers.values():
        if subs:
            ok, errors = await open_many(server.port, SUB_PATH, subs)
            clients += ok
            if errors:
                await close_all(clients)
                raise RuntimeError(f"{len(errors)} subscribers failed: {errors[0]!r}")
    await asyncio.sleep(0.5)
    totals = {name: [0, 0, 0.0, 0.0] for name in servers}
    try:
        for server in servers.values():  # warm-up: connections, code paths
            await post_window(server, 0.3, f"warm-{subs}")
        for half in range(2):
            order = list(servers) if half == 0 else list(reversed(servers))
            for name in order:
                cpu0 = servers[name].cpu_s()
                done, errors, elapsed = await post_window(
                    servers[name], prof.throughput_window_s / 2, f"tp-{subs}-{name}-{half}"
                )
                totals[name][3] += servers[name].cpu_s() - cpu0
                totals[name][0] += done
                totals[name][1] += errors
                totals[name][2] += elapsed
                await asyncio.sleep(0.3)
    finally:
        await close_all(clients)
    out = {}
    for name, (done, errors, elapsed, cpu_s) in totals.items():
        cpu_ms = cpu_s * 1000 / done if done else float("nan")
        out[name] = {
            "per_s": done / elapsed,
            "posts": done,
            "errors": errors,
            "cpu_ms_per_post": cpu_ms,
            "server_cpu_util": cpu_s / elapsed,
        }
        say(
            f"  {name:8} {subs:4} subs: {done / elapsed:7.1f} POST/s  ({done} in {elapsed:.1f} s, {errors} errors; "
            f"server CPU {cpu_ms:.1f} ms/post, {100 * cpu_s / elapsed:.0f}% of a core)"
        )
    return out


# -- 3. replay -------------------------------------------------------------------------------


async def replay_once(server: Server, total: int, path: str = REPLAY_PATH) -> float:
    t0 = time.perf_counter()
    client = await open_sse(server.port, path, count_target=total)
    try:
        arrived = await asyncio.wait_for(client.counted, timeout=60)
    finally:
        client.close()
    return (arrived - t0) * 1000


async def replay(servers: dict[str, Server], prof: Profile) -> dict[str, dict[str, float]]:
    times: dict[str, list[float]] = {name: [] for name in servers}
    for server in servers.values():  # warm-up, unrecorded
        await replay_once(server, REPLAY_EVENTS)
    for run in range(prof.replay_runs):
        order = list(servers) if run % 2 == 0 else list(reversed(servers))
        for name in order:
            times[name].append(await replay_once(servers[name], REPLAY_EVENTS))
            await asyncio.sleep(0.2)
    out = {}
    for name, values in times.items():
        out[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        say(
            f"  {name:8} replay of {REPLAY_EVENTS}: median {out[name]['median']:6.1f} ms  "
            f"min {out[name]['min']:6.1f}  max {out[name]['max']:6.1f}  ({len(values)} runs)"
        )
    return out


# -- 4. idle streams -------------------------------------------------------------------------


async def quiet(server: Server) -> None:
    try:
        await asyncio.to_thread(server.settle, 30)
    except TimeoutError:
        say(f"  ({server.name} never went quiet; measuring anyway)")


async def idle(server: Server, name: str, counts: tuple[int, ...], path: str) -> dict[int, dict[str, float]]:
    warm, _ = await open_many(server.port, path, 20)
    await close_all(warm, settle=1.0)
    await quiet(server)
    before = server.rss_kib()
    clients: list[SSEClient] = []
    out = {}
    try:
        for target in counts:
            t0 = time.perf_counter()
            ok, errors = await open_many(
                server.port, path, target - len(clients), first_idx=len(clients), timeout=120
            )
            clients += ok
            opened = time.perf_counter() - t0
            await asyncio.sleep(1.0)
            await quiet(server)
            held = sum(1 for c in clients if not c.lost.done())
            after = server.rss_kib()
            per = (after - before) / held if held else float("nan")
            out[target] = {
                "held": held,
                "kib_per_conn": per,
                "rss_before_kib": before,
                "rss_after_kib": after,
                "errors": len(errors),
            }
            say(
                f"  {name:8} {target:5} idle: held {held}, RSS {before / 1024:.1f} -> {after / 1024:.1f} MiB, "
                f"{per:.1f} KiB/stream, {len(errors)} failed, opened in {opened:.1f} s"
            )
    finally:
        await close_all(clients, settle=1.0)
    return out


# -- the run ---------------------------------------------------------------------------------


def machine_facts() -> dict[str, str]:
    facts = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(len(os.sched_getaffinity(0))),
        "python": platform.python_version(),
    }
    for package in ("daphne", "channels", "Twisted", "Django"):
        try:
            facts[package] = version(package)
        except Exception:
            facts[package] = "?"
    return facts


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def raise_nofile(need: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, need)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))  # servers inherit it
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def fmt(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "-"
    if unit == "held":
        return f"{value:,.0f}"
    return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"


def table(rows: list[Row]) -> str:
    head = ["metric", "crows", "baseline", "ratio", "lean", "ratio to lean", "eventstream", "ratio to es",
            "target", "met?"]
    lines = []
    for r in rows:
        ratio = (r.crows / r.baseline) if (r.crows is not None and r.baseline) else None
        lean_ratio = (r.crows / r.lean) if (r.crows is not None and r.lean) else None
        es_ratio = (r.crows / r.es) if (r.crows is not None and r.es) else None
        met = "-" if r.met is None else ("yes" if r.met else "NO")
        lines.append(
            [
                f"{r.metric} ({r.unit})",
                fmt(r.crows, r.unit),
                fmt(r.baseline, r.unit),
                f"{ratio:.2f}x" if ratio is not None else "-",
                fmt(r.lean, r.unit),
                f"{lean_ratio:.2f}x" if lean_ratio is not None else "-",
                fmt(r.es, r.unit),
                f"{es_ratio:.2f}x" if es_ratio is not None else "-",
                r.target or "-",
                met,
            ]
        )
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]

    def render(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([render(head), sep, *(render(x) for x in lines)])


async def eventstream_phase(prof: Profile, tmp: Path, template: Path, start, stop) -> dict:
    """django-eventstream on the same paths: fan-out, idle memory, replay of 10,000, and
    lost/duplicated events under reconnects with 4 concurrent writers (the app measured
    the same way, here, for the last)."""
    out: dict = {}
    live_dir = tmp / "es-idle"
    await asyncio.to_thread(_es.migrate, live_dir)
    es = _es.EventstreamServer("eventstream-idle", live_dir)
    es.start()
    try:
        out["idle"] = await idle(es, "eventstream", prof.idle_counts, SUB_PATH)
    finally:
        stop(es)
    replay_dir = tmp / "es-replay"
    await asyncio.to_thread(_es.migrate, replay_dir)
    # One more stored event than the app's: a resume names an event that exists, and gets
    # the ones after it (the library answers an unknown id with stream-reset).
    await asyncio.to_thread(_es.fill, replay_dir, REPLAY_EVENTS + 1)
    es = _es.EventstreamServer("eventstream-replay", replay_dir)
    es.start()
    try:
        path = "/api/events?nest_id=todo&since=1"
        await replay_once(es, REPLAY_EVENTS, path)  # warm-up
        times = [await replay_once(es, REPLAY_EVENTS, path) for _ in range(prof.replay_runs)]
        out["replay"] = {"median": statistics.median(times), "min": min(times), "max": max(times)}
        say(f"  eventstream replay of {REPLAY_EVENTS}: median {out['replay']['median']:.1f} ms")
    finally:
        stop(es)
    # Reconnects: 3 readers dropping and resuming with Last-Event-ID while 4 writers post.
    rc_dir = tmp / "es-rc"
    await asyncio.to_thread(_es.migrate, rc_dir)
    es = _es.EventstreamServer("eventstream-rc", rc_dir)
    (crows,) = start(("crows-rc", CROWS_APP, copy_db(template, tmp / "crows-rc")))
    es.start()
    try:
        out["reconnect"] = {}
        for name, server in (("crows", crows), ("eventstream", es)):
            out["reconnect"][name] = await asyncio.to_thread(
                _es.reconnect_check, f"http://127.0.0.1:{server.port}", writers=4, per_writer=25, readers=3
            )
            say(f"  {name:11} reconnects, 4 writers: {out['reconnect'][name]}")
    finally:
        stop(es, crows)
    return out


async def run(prof: Profile, quick: bool, tmp: Path, started_servers: list[Server],
              no_eventstream: bool = False) -> tuple[list[Row], dict]:
    def start(*specs: tuple) -> list[Server]:
        """Launch daphnes side by side (start-up is mostly imports), then wait for each."""
        servers = [Server(spec[0], spec[1], spec[2], extra_env=spec[3] if len(spec) > 3 else None)
                   for spec in specs]
        for server in servers:
            started_servers.append(server)
            server.launch()
        for server in servers:
            server.wait_ready()
        t0 = time.perf_counter()
        for server in servers:
            server.settle()
        say(f"  {len(servers)} servers up and quiet in {time.perf_counter() - t0:.1f} s after answering")
        return servers

    def stop(*servers: Server) -> None:
        for server in servers:
            server.stop()

    results: dict = {}
    t = begun = time.perf_counter()

    def phase(title: str) -> None:
        say(f"\n{title}  (t = {time.perf_counter() - begun:.0f} s, load average {loadavg()})")

    template = tmp / "template"
    migrate(template)
    say(f"migrated a template database in {time.perf_counter() - t:.1f} s")
    replay_src = copy_db(template, tmp / "replay-src")
    took, last_id = fill_events(replay_src, REPLAY_EVENTS)
    say(f"stored {REPLAY_EVENTS} events on nest todo in {took:.1f} s")

    phase("[1/4] fan-out latency and [2/4] emit throughput")
    live_c, live_b, live_l = start(
        ("crows", CROWS_APP, copy_db(template, tmp / "crows-live")),
        ("baseline", BASELINE_APP, copy_db(template, tmp / "baseline-live")),
        ("lean", BASELINE_APP, copy_db(template, tmp / "lean-live"), {"BENCH_LEAN_LAYER": "1"}),
    )
    pair = {"crows": live_c, "baseline": live_b, "lean": live_l}
    if not no_eventstream:
        # django-eventstream takes its turns in the same rounds as the others.
        t_venv = time.perf_counter()
        await asyncio.to_thread(_es.ensure_venv)
        say(f"  django-eventstream venv ready in {time.perf_counter() - t_venv:.1f} s ({_es.VENV})")
        await asyncio.to_thread(_es.migrate, tmp / "es-live")
        es_live = _es.EventstreamServer("eventstream", tmp / "es-live")
        started_servers.append(es_live)
        es_live.start()
        es_live.settle()
        pair["eventstream"] = es_live
    results["fanout"] = {}
    for n in (100, 1_000):
        results["fanout"][n] = await fanout(pair, n, prof)
    results["throughput"] = {}
    for subs in (100, 0):  # with subscribers first, while the nest's stream is still short
        results["throughput"][subs] = await throughput(pair, subs, prof)
    stop(*pair.values())

    # Idle streams first, on fresh servers, then replay on the same ones. The app's idle
    # streams resume nest todo after its last stored event, so they start idle as on a new
    # nest; the baseline's live-only streams replay nothing anyway.
    phase("[3/4] idle streams")
    idle_paths = {"crows": f"{SUB_PATH}&since={last_id}", "baseline": SUB_PATH}
    crows, baseline = start(
        ("crows-2", CROWS_APP, copy_db(replay_src, tmp / "crows-2")),
        ("baseline-2", BASELINE_APP, copy_db(replay_src, tmp / "baseline-2")),
    )
    pair = {"crows": crows, "baseline": baseline}
    results["idle"] = {}
    for name, server in pair.items():  # one at a time
        results["idle"][name] = await idle(server, name, prof.idle_counts, idle_paths[name])

    phase("[4/4] replay")
    for server in pair.values():
        await quiet(server)
    results["replay"] = await replay(pair, prof)
    stop(*pair.values())

    if not no_eventstream:
        phase("[5/5] django-eventstream (its own venv) and reconnects under 4 writers")
        results["eventstream"] = await eventstream_phase(prof, tmp, template, start, stop)

    phase("done")
    rows: list[Row] = []
    f = results["fanout"]
    for n in (100, 1_000):
        for p in ("p50", "p99"):
            target, met = "", None
            if n == 1_000 and p == "p99":
                target = f"<= {TARGET_FANOUT_P99_MS:.0f}"
                met = f[n]["crows"]["p99"] <= TARGET_FANOUT_P99_MS and f[n]["crows"]["missed"] == 0
            rows.append(
                Row(f"fan-out to {n:,} subs {p}", f[n]["crows"][p], f[n]["baseline"][p], "ms", target, met,
                    lean=f[n]["lean"][p])
            )
        rows.append(
            Row(
                f"server CPU per post to {n:,} subs",
                f[n]["crows"]["cpu_ms"],
                f[n]["baseline"]["cpu_ms"],
                "ms",
                lean=f[n]["lean"]["cpu_ms"],
            )
        )
    tp = results["throughput"]
    for subs in (0, 100):
        rows.append(
            Row(
                f"POST+emit, 10 posters, {subs} subs",
                tp[subs]["crows"]["per_s"],
                tp[subs]["baseline"]["per_s"],
                "/s",
                lean=tp[subs]["lean"]["per_s"],
            )
        )
        rows.append(
            Row(
                f"server CPU per POST, {subs} subs",
                tp[subs]["crows"]["cpu_ms_per_post"],
                tp[subs]["baseline"]["cpu_ms_per_post"],
                "ms",
                lean=tp[subs]["lean"]["cpu_ms_per_post"],
            )
        )
    rp = results["replay"]
    rows.append(
        Row(
            f"replay of {REPLAY_EVENTS:,} events, median",
            rp["crows"]["median"],
            rp["baseline"]["median"],
            "ms",
            f"<= {TARGET_REPLAY_MS:.0f}",
            rp["crows"]["median"] <= TARGET_REPLAY_MS,
        )
    )
    idle_r = results["idle"]
    for n in prof.idle_counts:
        c, b = idle_r["crows"][n], idle_r["baseline"][n]
        is_target = n == TARGET_IDLE_STREAMS
        rows.append(
            Row(
                f"idle streams held of {n:,}",
                c["held"],
                b["held"],
                "held",
                f"= {n:,}" if is_target else "",
                (c["held"] == n) if is_target else None,
            )
        )
        rows.append(
            Row(
                f"memory per idle stream at {n:,}",
                c["kib_per_conn"],
                b["kib_per_conn"],
                "KiB",
                f"<= {TARGET_IDLE_KIB:.0f}" if is_target else "",
                (c["kib_per_conn"] <= TARGET_IDLE_KIB) if is_target else None,
            )
        )
    if "eventstream" in results:
        es = results["eventstream"]
        for row in rows:
            for n in (100, 1_000):
                for p in ("p50", "p99"):
                    if row.metric == f"fan-out to {n:,} subs {p}":
                        row.es = f[n]["eventstream"][p]
                if row.metric == f"server CPU per post to {n:,} subs":
                    row.es = f[n]["eventstream"]["cpu_ms"]
            for subs in (0, 100):
                if row.metric == f"POST+emit, 10 posters, {subs} subs":
                    row.es = tp[subs]["eventstream"]["per_s"]
                if row.metric == f"server CPU per POST, {subs} subs":
                    row.es = tp[subs]["eventstream"]["cpu_ms_per_post"]
            if row.metric.startswith("replay of"):
                row.es = es["replay"]["median"]
            for n in prof.idle_counts:
                if row.metric == f"memory per idle stream at {n:,}":
                    row.es = es["idle"][n]["kib_per_conn"]
                if row.metric == f"idle streams held of {n:,}":
                    row.es = es["idle"][n]["held"]
        rc = es["reconnect"]
        for what in ("lost", "duplicated"):
            rows.append(Row(f"events {what}, 3 readers reconnecting, 4 writers x 25", rc["crows"][what], None,
                            "events", "0", rc["crows"][what] == 0, es=rc["eventstream"][what]))
    if quick:
        rows.append(
            Row(
                f"idle streams held of {TARGET_IDLE_STREAMS:,}",
                None,
                None,
                "held",
                f"= {TARGET_IDLE_STREAMS:,}",
                None,
                "not run with --quick",
            )
        )
    return rows, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, 1,000 idle streams only (~1 min)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (databases, daphne logs)")
    parser.add_argument("--no-eventstream", action="store_true",
                        help="skip the django-eventstream comparison (and its venv)")
    args = parser.parse_args()
    prof = QUICK if args.quick else FULL

    nofile = raise_nofile(2 * max(prof.idle_counts) + 1_000)
    if nofile < max(prof.idle_counts) + 500:
        say(f"RLIMIT_NOFILE is {nofile}: too low for {max(prof.idle_counts)} streams")
        return 2
    facts = machine_facts()
    facts["load_before"] = loadavg()
    say(
        "stream bench " + ("--quick " if args.quick else "") + ", ".join(f"{k} {v}" for k, v in facts.items())
    )

    tmp = Path(tempfile.mkdtemp(prefix="crows-stream-bench-"))
    servers: list[Server] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the finally below runs
    t0 = time.perf_counter()
    failed = False
    try:
        rows, results = asyncio.run(asyncio.wait_for(run(prof, args.quick, tmp, servers, args.no_eventstream), timeout=1800))
    except (KeyboardInterrupt, SystemExit):
        say("\ninterrupted; servers stopped")
        return 130
    except BaseException as exc:
        failed = True
        say(f"\nbench failed: {exc!r}")
        for server in servers:
            tail = server.log()[-1500:]
            if tail.strip():
                say(f"--- {server.name} log tail ---\n{tail}")
        raise
    finally:
        for server in servers:
            server.stop()
        if args.keep or failed:
            say(f"kept {tmp} (databases, daphne logs)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    facts["load_after"] = loadavg()
    facts["seconds"] = f"{time.perf_counter() - t0:.0f}"
    say("\nratio = crows / baseline (for ms and KiB lower is better, for /s higher is better)\n")
    say(table(rows))
    say(
        f"\n{facts['date']}; nproc {facts['nproc']}; Python {facts['python']}; daphne {facts['daphne']}; "
        f"channels {facts['channels']}; Twisted {facts['Twisted']}; Django {facts['Django']}; "
        f"load average {facts['load_before']} before, {facts['load_after']} after; {facts['seconds']} s"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"facts": facts, "rows": [asdict(r) for r in rows], "raw": results}, indent=2, default=str
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
