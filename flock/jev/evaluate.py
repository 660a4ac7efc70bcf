"""Scoring a question against a labelled JSONL file: the logic behind ``jev_eval``.

The file holds one ``{"text": ..., "<label field>": ...}`` object a line, the label field
being the question's (``kind`` for kind, ``task_type`` for task_type). Labels the question
does not know are kept and counted as errors, since Jev can never answer them; a line that
is not such an object stops the run with its line number.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.metrics import confusion_matrix, f1_score, precision_recall_fscore_support

from flock.jev.calibration import ECE_BINS, expected_calibration_error
from flock.jev.questions import JevDataError, JevError, read_examples
from flock.jev.service import BAND_HIGH, Jev, default_jev

# Each message is tagged this many times for the latency figures, after one warm-up pass,
# so a 150-line file yields enough calls for a p99 that is more than its single maximum.
LATENCY_PASSES = 5


class EvalInputError(JevError):
    """The evaluation file cannot be used; the message says where and why."""


@dataclass(frozen=True, slots=True)
class LabelStats:
    label: str
    support: int
    precision: float
    recall: float
    f1: float
    latency_p50_ms: float


@dataclass(frozen=True, slots=True)
class Mistake:
    text: str
    expected: str
    answered: str
    confidence: float


@dataclass
class EvalReport:
    question: str
    version: str
    impl: str
    path: Path
    n: int
    accuracy: float
    macro_f1: float
    ece: float
    high_threshold: float
    high_count: int
    high_accuracy: float
    latency_p50_ms: float
    latency_p99_ms: float
    latency_calls: int
    columns: list[str]  # the question's choices, in order
    rows: list[str]  # the choices, then any unknown labels found in the file
    confusion: np.ndarray  # rows x columns counts
    per_label: list[LabelStats]
    unknown_labels: dict[str, int] = field(default_factory=dict)
    mistakes: list[Mistake] = field(default_factory=list)


def _percentile_ms(samples_ns: list[int], q: float) -> float:
    return float(np.percentile(np.asarray(samples_ns, dtype=np.float64), q)) / 1e6 if samples_ns else 0.0


def evaluate_file(
    path: Path | str, question: str = "kind", *, jev: Jev | None = None, latency_passes: int = LATENCY_PASSES
) -> EvalReport:
    jev = jev or default_jev()
    path = Path(path)
    spec = jev.question(question)
    if not path.is_file():
        raise EvalInputError(f"{path}: no such file")
    try:
        examples = read_examples(path, spec.label_field)
    except JevDataError as exc:
        raise EvalInputError(str(exc)) from None
    except UnicodeDecodeError:
        raise EvalInputError(f"{path}: not UTF-8 text") from None
    if not examples:
        raise EvalInputError(f'{path}: no lines with "text" and "{spec.label_field}"')

    # Load (or train) the model before anything is timed.
    jev.loaded(question)
    answers = [jev.ask(question, example.text) for example in examples]

    # Latency per tag: the wall time of one ask(), as a caller sees it.
    per_text_ns: list[list[int]] = [[] for _ in examples]
    for _ in range(latency_passes):
        for i, example in enumerate(examples):
            started = time.perf_counter_ns()
            jev.ask(question, example.text)
            per_text_ns[i].append(time.perf_counter_ns() - started)
    all_ns = [ns for samples in per_text_ns for ns in samples]

    expected = [example.label for example in examples]
    answered = [answer.choice for answer in answers]
    confidences = np.array([answer.probs[answer.choice] for answer in answers])
    correct = np.array([e == a for e, a in zip(expected, answered, strict=True)])
    high = np.array([answer.band == BAND_HIGH for answer in answers])

    columns = list(spec.choices)
    unknown = Counter(label for label in expected if label not in spec.choices)
    rows = columns + sorted(unknown)
    confusion = confusion_matrix(expected, answered, labels=rows)[:, : len(columns)]

    # Macro-F1 over every label that occurs on either side, so an unknown label counts as
    # a class Jev scored zero on rather than silently vanishing from the average.
    scored_labels = sorted(set(expected) | set(answered))
    macro_f1 = float(f1_score(expected, answered, labels=scored_labels, average="macro", zero_division=0))
    precision, recall, f1, support = precision_recall_fscore_support(
        expected, answered, labels=rows, zero_division=0
    )
    per_label = []
    for i, label in enumerate(rows):
        label_ns = [
            ns for samples, e in zip(per_text_ns, expected, strict=True) if e == label for ns in samples
        ]
        per_label.append(
            LabelStats(
                label,
                int(support[i]),
                float(precision[i]),
                float(recall[i]),
                float(f1[i]),
                _percentile_ms(label_ns, 50),
            )
        )

    model = jev.loaded(question).model
    return EvalReport(
        question=question,
        version=model.version,
        impl=answers[0].impl,
        path=path,
        n=len(examples),
        accuracy=float(correct.mean()),
        macro_f1=macro_f1,
        ece=expected_calibration_error(confidences, correct),
        high_threshold=spec.high_threshold,
        high_count=int(high.sum()),
        high_accuracy=float(correct[high].mean()) if high.any() else 0.0,
        latency_p50_ms=_percentile_ms(all_ns, 50),
        latency_p99_ms=_percentile_ms(all_ns, 99),
        latency_calls=len(all_ns),
        columns=columns,
        rows=rows,
        confusion=confusion,
        per_label=per_label,
        unknown_labels=dict(unknown),
        mistakes=[
            Mistake(ex.text, ex.label, ans.choice, ans.probs[ans.choice])
            for ex, ans, ok in zip(examples, answers, correct, strict=True)
            if not ok
        ],
    )


def format_report(report: EvalReport, *, show_mistakes: int = 0) -> str:
    share = report.high_count / report.n
    lines = [
        f"Jev eval: question {report.question!r} on {report.path}",
        f"model      {report.version} ({report.impl})",
        f"messages   {report.n}",
        f"accuracy   {report.accuracy:.3f}",
        f"macro-F1   {report.macro_f1:.3f}",
        f"ECE        {report.ece:.3f}  ({ECE_BINS} bins, top label)",
        (
            f"high band  {report.high_count}/{report.n} ({share:.0%}) at p >= {report.high_threshold:.2f}, "
            f"{report.high_accuracy:.3f} of them right"
        ),
        (
            f"latency    p50 {report.latency_p50_ms:.3f} ms, p99 {report.latency_p99_ms:.3f} ms per tag "
            f"({report.latency_calls} calls)"
        ),
    ]
    if report.unknown_labels:
        found = ", ".join(f"{label!r} x{count}" for label, count in sorted(report.unknown_labels.items()))
        total = sum(report.unknown_labels.values())
        lines.append(
            f"unknown    {total} line(s) carry labels {report.question!r} does not know ({found}); counted as errors"
        )

    width = max(len(label) for label in report.rows + ["label"]) + 2
    lines += ["", f"{'label':<{width}}support  precision  recall     f1  p50 ms"]
    for stats in report.per_label:
        lines.append(
            f"{stats.label:<{width}}{stats.support:>7}  {stats.precision:>9.3f}  {stats.recall:>6.3f}  "
            f"{stats.f1:>5.3f}  {stats.latency_p50_ms:>6.3f}"
        )

    cell = max(max(len(c) for c in report.columns), 5) + 1
    lines += ["", "confusion (rows: expected, columns: Jev's choice)"]
    lines.append(" " * width + "".join(f"{c:>{cell}}" for c in report.columns))
    for label, counts in zip(report.rows, report.confusion, strict=True):
        lines.append(f"{label:<{width}}" + "".join(f"{int(n):>{cell}}" for n in counts))

    if show_mistakes and report.mistakes:
        lines += [
            "",
            f"mistakes (first {min(show_mistakes, len(report.mistakes))} of {len(report.mistakes)})",
        ]
        for mistake in report.mistakes[:show_mistakes]:
            lines.append(
                f"  {mistake.expected} -> {mistake.answered} ({mistake.confidence:.2f}): {mistake.text}"
            )
    return "\n".join(lines)
