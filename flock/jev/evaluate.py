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

from flock.jev.answers import BAND_HIGH
from flock.jev.calibration import ECE_BINS, expected_calibration_error, fit_temperature
from flock.jev.model import ordered_logits
from flock.jev.questions import JevDataError, JevError
from flock.jev.service import Jev, default_jev
from flock.jev.serving import softmax

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
    if path.is_dir():
        raise EvalInputError(f"{path}: is a directory; name a JSONL file")
    if not path.is_file():
        raise EvalInputError(f"{path}: no such file")
    try:
        examples = spec.read(path)
    except JevDataError as exc:
        raise EvalInputError(str(exc)) from None
    except UnicodeDecodeError:
        raise EvalInputError(f"{path}: not UTF-8 text") from None
    if not examples:
        raise EvalInputError(f'{path}: no lines with "text" and "{spec.label_field}"')

    # Load (or train) the model before anything is timed.
    jev.loaded(question)
    answers = [jev.ask(question, example.text, second_opinion=False) for example in examples]

    # Latency per tag: the wall time of one ask(), as a caller sees it.
    per_text_ns: list[list[int]] = [[] for _ in examples]
    for _ in range(latency_passes):
        for i, example in enumerate(examples):
            started = time.perf_counter_ns()
            jev.ask(question, example.text, second_opinion=False)
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


# --- Leave one writer out ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriterFigures:
    """How a model trained without ``writer``'s lines does on them (or, for ``all``, pooled)."""

    writer: str
    n: int
    accuracy: float
    macro_f1: float
    ece_raw: float  # temperature 1: the logistic regression's own probabilities
    ece: float  # with the temperature fitted without this writer's lines
    high_count: int
    high_accuracy: float
    hard_n: int
    hard_accuracy: float
    confusion: np.ndarray  # choices x choices
    per_label: list[LabelStats]
    mistakes: list[Mistake]


@dataclass
class WriterReport:
    question: str
    version: str
    temperature: float  # the served model's, fitted on every writer's out-of-writer rows
    high_threshold: float
    columns: list[str]
    writers: list[WriterFigures]
    pooled: WriterFigures
    # The old way, for comparison: a temperature fitted on the same-author dev split, and the
    # pooled out-of-writer ECE it gives. None without a dev file.
    dev_temperature: float | None = None
    ece_dev_temperature: float | None = None


def _figures(
    writer: str,
    choices: list[str],
    labels: list[str],
    probs_raw: np.ndarray,
    probs: np.ndarray,
    hard: np.ndarray,
    texts: list[str],
    high_threshold: float,
) -> WriterFigures:
    answered = [choices[i] for i in probs.argmax(axis=1)]
    correct = np.array([a == e for a, e in zip(answered, labels, strict=True)])
    confidence = probs.max(axis=1)
    high = confidence >= high_threshold
    present = sorted(set(labels) | set(answered), key=choices.index)
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, answered, labels=choices, zero_division=0
    )
    return WriterFigures(
        writer=writer,
        n=len(labels),
        accuracy=float(correct.mean()),
        macro_f1=float(f1_score(labels, answered, labels=present, average="macro", zero_division=0)),
        # A positive temperature never changes the argmax, so `correct` holds for both.
        ece_raw=expected_calibration_error(probs_raw.max(axis=1), correct),
        ece=expected_calibration_error(confidence, correct),
        high_count=int(high.sum()),
        high_accuracy=float(correct[high].mean()) if high.any() else 0.0,
        hard_n=int(hard.sum()),
        hard_accuracy=float(correct[hard].mean()) if hard.any() else 0.0,
        confusion=confusion_matrix(labels, answered, labels=choices),
        per_label=[
            LabelStats(label, int(support[i]), float(precision[i]), float(recall[i]), float(f1[i]), 0.0)
            for i, label in enumerate(choices)
        ],
        mistakes=[
            Mistake(text, e, a, float(c))
            for text, e, a, c, ok in zip(texts, labels, answered, confidence, correct, strict=True)
            if not ok
        ],
    )


def writer_report(question: str = "kind", *, jev: Jev | None = None) -> WriterReport | None:
    """Leave-one-writer-out figures from the question's model, or None with one writer.

    Training already scored every line with a model fitted without its writer's lines
    (model.OutOfWriter); this turns those scores into figures. Each writer's probabilities
    use the temperature fitted on the other writers' rows, so no writer's ECE is measured
    with a temperature fitted on its own labels.
    """
    jev = jev or default_jev()
    trained = jev.trained(question)
    held = trained.out_of_writer
    if held is None:
        return None
    choices = list(trained.choices)
    writers = np.array(held.writers)
    labels = list(held.labels)
    hard = np.array(held.hard, dtype=bool)
    raw = softmax(held.logits, 1.0)
    temperatures = np.array([[held.writer_temperatures[w]] for w in held.writers])
    calibrated = softmax(held.logits / temperatures, 1.0)
    threshold = jev.question(question).high_threshold
    figures = []
    for writer in dict.fromkeys(held.writers):
        rows = writers == writer
        figures.append(
            _figures(
                writer,
                choices,
                [label for label, r in zip(labels, rows, strict=True) if r],
                raw[rows],
                calibrated[rows],
                hard[rows],
                [text for text, r in zip(held.texts, rows, strict=True) if r],
                threshold,
            )
        )
    pooled = _figures("all", choices, labels, raw, calibrated, hard, list(held.texts), threshold)
    dev_temperature = ece_dev = None
    dev = jev.question(question).dev_examples()
    if dev:
        dev_logits = ordered_logits(trained.pipeline, [e.text for e in dev], choices)
        dev_targets = np.array([choices.index(e.label) for e in dev], dtype=np.intp)
        dev_temperature = fit_temperature(dev_logits, dev_targets)
        with_dev_t = softmax(held.logits, dev_temperature)
        right = with_dev_t.argmax(axis=1) == np.array([choices.index(label) for label in labels])
        ece_dev = expected_calibration_error(with_dev_t.max(axis=1), right)
    return WriterReport(
        question=question,
        version=trained.version,
        temperature=trained.temperature,
        high_threshold=threshold,
        columns=choices,
        writers=figures,
        pooled=pooled,
        dev_temperature=dev_temperature,
        ece_dev_temperature=ece_dev,
    )


def _confusion_lines(columns: list[str], confusion: np.ndarray, indent: str = "") -> list[str]:
    width = max(len(label) for label in columns + ["label"]) + 2
    cell = max(max(len(c) for c in columns), 5) + 1
    lines = [indent + " " * width + "".join(f"{c:>{cell}}" for c in columns)]
    for label, counts in zip(columns, confusion, strict=True):
        lines.append(indent + f"{label:<{width}}" + "".join(f"{int(n):>{cell}}" for n in counts))
    return lines


def format_writer_report(report: WriterReport, *, show_mistakes: int = 0) -> str:
    p = report.pooled
    lines = [
        "",
        f"leave-one-writer-out: question {report.question!r}, {len(report.writers)} writers, {p.n} lines",
        "(each writer's lines scored by a model trained on the other writers' lines only; its temperature",
        " fitted on the other writers' out-of-writer scores; the served model's temperature is "
        f"{report.temperature:.2f})",
        f"lowo accuracy   {p.accuracy:.3f}",
        f"lowo macro-F1   {p.macro_f1:.3f}",
        f"lowo ECE        {p.ece:.3f}  (before calibration {p.ece_raw:.3f})",
        (
            f"lowo hard       {p.hard_accuracy:.3f}  ({p.hard_n} lines marked hard)"
            if p.hard_n
            else "lowo hard       -  (no line is marked hard)"
        ),
    ]
    if report.ece_dev_temperature is not None:
        lines.append(
            f"lowo ECE with a same-author dev temperature ({report.dev_temperature:.2f}): "
            f"{report.ece_dev_temperature:.3f}"
        )
    lines += [
        "",
        f"{'writer':<12}{'lines':>6}  accuracy  macro-F1  ECE raw    ECE  {'high band':>16}  hard lines",
    ]
    for f in [*report.writers, p]:
        high = f"{f.high_count} ({f.high_accuracy:.3f})"
        hard = f"{f.hard_accuracy:.3f} of {f.hard_n}" if f.hard_n else "-"
        lines.append(
            f"{f.writer:<12}{f.n:>6}  {f.accuracy:>8.3f}  {f.macro_f1:>8.3f}  {f.ece_raw:>7.3f}  {f.ece:>5.3f}  "
            f"{high:>16}  {hard}"
        )
    width = max(len(label) for label in report.columns + ["label"]) + 2
    lines += [
        "",
        "per kind, all writers held out in turn",
        f"{'label':<{width}}support  precision  recall     f1",
    ]
    for stats in p.per_label:
        lines.append(
            f"{stats.label:<{width}}{stats.support:>7}  {stats.precision:>9.3f}  {stats.recall:>6.3f}  {stats.f1:>5.3f}"
        )
    lines += ["", "confusion, all writers held out in turn (rows: expected, columns: Jev's choice)"]
    lines += _confusion_lines(report.columns, p.confusion)
    for f in report.writers:
        lines += ["", f"confusion, {f.writer} held out"]
        lines += _confusion_lines(report.columns, f.confusion)
    if show_mistakes:
        for f in report.writers:
            if f.mistakes:
                lines += [
                    "",
                    f"{f.writer} held out: mistakes (first {min(show_mistakes, len(f.mistakes))} of {len(f.mistakes)})",
                ]
                for m in f.mistakes[:show_mistakes]:
                    lines.append(f"  {m.expected} -> {m.answered} ({m.confidence:.2f}): {m.text}")
    return "\n".join(lines)
