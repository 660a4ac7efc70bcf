"""How fast the brains think: the mock per task against a bare-hashing baseline, and the real
providers' overhead against local fake servers.

    .venv/bin/python bench/brains.py            # 2,000 mock flights per task, 200 per provider
    .venv/bin/python bench/brains.py --n 500    # quicker

The baseline is a bare function call doing the hashing every mock flight does (a stable
hash of the whole request, and seeding a private Random from it), so the ratio says what
the mock's own work (reading the item, composing in voice, counting tokens) costs on top.
The budget is a p50 under 5 ms per mock flight with no latency configured.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from django.conf import settings  # noqa: E402 - after the sys.path line

from flock.brains import BrainRequest, Persona, get_brain  # noqa: E402
from flock.brains.mock import request_digest  # noqa: E402

MOCK_P50_BUDGET_MS = 5.0

PERSONA = Persona(
    name="Hugin",
    epithet="the Far-Flyer",
    strength="research: finding sources, fact-checking, comparing options",
    backstory="Hugin flies out at dawn and back at dusk with more questions than it left with.",
    persona="You are Hugin, the flock's researcher. You never invent a source.",
    voice="Quick, curious, a little breathless; medium sentences that often end in a question.",
    relationships={"Munin": "Its twin: Hugin flies, Munin remembers, and they bicker."},
    openers=("Back from the far field.", "Interesting —"),
    closers=("Sources on request.", "Off again."),
)
ITEMS = [
    "Draft the launch post, email the beta list, and book the venue for Friday",
    "Should we use Postgres or SQLite for the crow tracker?",
    "Fix the login bug on Safari",
    "Research how crows recognise human faces and summarise the best three studies",
    "Total the numbers in the expenses spreadsheet and flag anything over budget",
]
CHAT = [{"role": "user", "content": "@Hugin can you find three sources on corvid memory?"}]
PARTS = [
    {"crow": "Hugin", "text": "Postgres: it scales and the team knows it."},
    {"crow": "Munin", "text": "SQLite: one file, zero ops, enough for three users."},
]


def requests_for(task: str, n: int) -> list[BrainRequest]:
    out = []
    for i in range(n):
        item = f"{ITEMS[i % len(ITEMS)]} (run {i})"
        context: dict = {"item_text": item}
        messages: list = []
        if task == "subtask":
            context["subtask"] = "email the beta list"
        elif task in ("merge", "synthesise"):
            context["parts"] = PARTS
        elif task == "banter":
            context = {
                "listener": "Munin",
                "recent_events": [{"event": "crow.landed", "crow": "Munin", "ok": True}],
            }
        elif task == "chat":
            context = {"msg_id": f"todo-{i + 1}", "requester": "owner"}
            messages = CHAT
        out.append(BrainRequest(PERSONA, task, messages, 400, context))
    return out


def timed(call: Callable[[BrainRequest], object], requests: list[BrainRequest]) -> list[float]:
    samples = []
    for request in requests:
        started = time.perf_counter()
        call(request)
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def baseline(request: BrainRequest) -> random.Random:
    return random.Random(int.from_bytes(request_digest(request), "big"))


def p(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q) - 1] if len(samples) > 1 else samples[0]


def bench_mock(n: int) -> bool:
    brain = get_brain("mock")
    print(f"Mock brain: {n} flights per task, one thread, no latency configured")
    print(f"{'task':<12} {'p50 ms':>8} {'p95 ms':>8} {'x baseline':>11}")
    base_samples = timed(baseline, requests_for("answer", n))
    base50 = statistics.median(base_samples)
    print(f"{'baseline':<12} {base50:>8.3f} {p(base_samples, 95):>8.3f} {1.0:>11.1f}")
    worst = 0.0
    for task in ("triage", "answer", "subtask", "merge", "synthesise", "banter", "chat"):
        requests = requests_for(task, n)
        brain.think(requests[0])  # first call warms caches
        samples = timed(brain.think, requests)
        p50 = statistics.median(samples)
        worst = max(worst, p50)
        print(f"{task:<12} {p50:>8.3f} {p(samples, 95):>8.3f} {p50 / base50:>11.1f}")
    ok = worst < MOCK_P50_BUDGET_MS
    print(f"worst p50 {worst:.3f} ms: {'within' if ok else 'OVER'} the {MOCK_P50_BUDGET_MS:g} ms budget\n")
    return ok


def bench_providers(n: int) -> None:
    from tests.fakes.providers import FakeAnthropic, FakeOpenAI

    fakes = {"openai": FakeOpenAI().start(), "anthropic": FakeAnthropic().start()}
    try:
        settings.configure(
            CROWS_OPENAI_BASE_URL=fakes["openai"].base_url,
            CROWS_OPENAI_API_KEY=fakes["openai"].api_key,
            CROWS_ANTHROPIC_BASE_URL=fakes["anthropic"].base_url,
            CROWS_ANTHROPIC_API_KEY=fakes["anthropic"].api_key,
        )
        print(f"Real providers against local fake servers: {n} calls each (SDK, HTTP and thread overhead)")
        print(f"{'provider':<12} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8}")
        for name, spec in (("openai", "openai:gpt-4o-mini"), ("anthropic", "anthropic:claude-sonnet-4-6")):
            brain = get_brain(spec)
            requests = requests_for("answer", n)
            started = time.perf_counter()
            first = brain.think(requests[0])
            first_ms = (time.perf_counter() - started) * 1000.0
            assert first.ok, first.error
            samples = timed(brain.think, requests[1:])
            print(f"{name:<12} {first_ms:>9.1f} {statistics.median(samples):>8.3f} {p(samples, 95):>8.3f}")
    finally:
        for fake in fakes.values():
            fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="mock flights per task")
    parser.add_argument("--provider-n", type=int, default=200, help="calls per real provider")
    parser.add_argument("--no-providers", action="store_true", help="skip the fake-server round trips")
    args = parser.parse_args()
    ok = bench_mock(args.n)
    if not args.no_providers:
        bench_providers(args.provider_n)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
