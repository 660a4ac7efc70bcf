"""Jev latency per tag, beside baselines measured in the same run.

    .venv/bin/python bench/jev.py [--calls N]

For every question it tags that question's dev messages (and, for kind, the unseen test
messages) over and over, one string per call as the chatroom does, and prints p50/p99 per
tag (wall clock, plus the p99 of the thread's CPU time) next to two baselines timed on the
same strings in the same process:

- ``split``: a bare ``len(text.split())``, the floor of doing anything per message;
- ``sklearn``: ``predict_proba`` of a LogisticRegression with one feature (the length),
  the price of a single trivial call through scikit-learn's public API.

The ratios say how Jev compares with those on this machine today, which travels better
between machines than the absolute milliseconds do. With ``--runs N`` (default 3) each
question is timed N times, Jev and the sklearn baseline one after the other in every run,
so load that drifts hits both alike; each run's p50 ratio is printed, and the table's
figures are the medians over the runs.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from flock.jev.questions import read_examples  # noqa: E402 (after the sys.path line)
from flock.jev.service import Jev  # noqa: E402

UNSEEN_KIND = REPO / "tests" / "flock" / "data" / "kind_unseen.jsonl"


def timed(call: Callable[[str], object], texts: list[str], calls: int) -> tuple[np.ndarray, np.ndarray]:
    """Wall and on-CPU milliseconds per call, one sample per call, cycling through ``texts``.

    On a shared machine the wall-clock tail is mostly the scheduler handing the core to
    someone else mid-call; the thread's CPU time shows what the call itself cost.
    """
    for text in texts[:50]:  # warm caches and lazy imports before timing
        call(text)
    wall = np.empty(calls)
    cpu = np.empty(calls)
    for i in range(calls):
        text = texts[i % len(texts)]
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        call(text)
        cpu[i] = time.thread_time_ns() - started_cpu
        wall[i] = time.perf_counter_ns() - started
    return wall / 1e6, cpu / 1e6


def trivial_sklearn() -> Callable[[str], object]:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(np.array([[1.0], [20.0], [3.0], [40.0]]), [0, 1, 0, 1])
    return lambda text: model.predict_proba([[float(len(text))]])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000, help="timed calls per question and baseline")
    parser.add_argument("--cache-dir", type=Path, default=None, help="model cache (default: the project's)")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per question (medians reported)")
    args = parser.parse_args()

    jev = Jev(cache_dir=args.cache_dir)
    started = time.perf_counter()
    versions = jev.warm()
    print(f"warm: {len(versions)} questions loaded in {time.perf_counter() - started:.2f} s")

    def baseline_split(text: str) -> object:
        return len(text.split())

    baseline_sklearn = trivial_sklearn()

    header = (
        f"{'question':<12} {'msgs':>5} {'p50 ms':>8} {'p99 ms':>8} {'cpu p99':>8} {'sklearn p50':>12} "
        f"{'sklearn p99':>12} {'p50 ratio':>10} {'p99 ratio':>10} {'split p50':>10} {'x split':>8}"
    )
    print(header)
    print("-" * len(header))
    # The collector runs when it runs in production too, but a pause landing in one
    # column and not the other would skew a ratio measured a few seconds apart.
    gc.collect()
    for name, question in jev.questions().items():
        texts = [e.text for e in question.dev_examples() or question.train_examples()]
        if name == "kind" and UNSEEN_KIND.exists():
            texts += [e.text for e in read_examples(UNSEEN_KIND, question.label_field)]
        runs = []
        for _ in range(max(args.runs, 1)):
            jev_ms, jev_cpu_ms = timed(functools.partial(jev.ask, name), texts, args.calls)
            sklearn_ms, _ = timed(baseline_sklearn, texts, args.calls)
            split_ms, _ = timed(baseline_split, texts, args.calls)
            runs.append(
                (
                    np.percentile(jev_ms, 50),
                    np.percentile(jev_ms, 99),
                    np.percentile(jev_cpu_ms, 99),
                    np.percentile(sklearn_ms, 50),
                    np.percentile(sklearn_ms, 99),
                    np.percentile(split_ms, 50),
                )
            )
        table = np.array(runs)
        p50, p99, cpu99, sk50, sk99, split50 = np.median(table, axis=0)
        ratios = " / ".join(f"{run[0] / run[3]:.2f}" for run in runs)
        print(
            f"{name:<12} {len(texts):>5} {p50:>8.3f} {p99:>8.3f} {cpu99:>8.3f} "
            f"{sk50:>12.3f} {sk99:>12.3f} {np.median(table[:, 0] / table[:, 3]):>10.2f} "
            f"{np.median(table[:, 1] / table[:, 4]):>10.2f} {split50:>10.4f} {p50 / split50:>8.0f}"
            f"   runs: {ratios}"
        )
    print(
        "\nms are wall-clock per tag; cpu p99 is the calling thread's CPU time, which a busy machine"
        "\ncannot inflate. ratio: Jev over one trivial sklearn predict_proba on the same strings"
        "\n(the median of the runs' ratios; runs: each run's p50 ratio);"
        "\nx split: Jev's p50 over a bare len(text.split())."
    )


if __name__ == "__main__":
    main()
