"""Importing independent writers' lines into the corpus, one folder per writer.

Jev's corpus is written by several people who each worked only from the labelling rules in
docs/JEV.md. Keeping every writer's lines apart (``data/writers/<writer>/<question>.jsonl``)
is what lets training calibrate on out-of-writer predictions and ``jev_eval`` hold one
writer out at a time. The original ``<question>.jsonl`` counts as the writer ``original``.

``import_writers`` copies writers' raw files in and checks every line on the way: a JSON
object, a non-empty ``text`` (for a pair question, its two ``input_fields``, which are
kept as written and compared joined by ``pairs.pair_text``), a label among the question's choices, ``hard`` a boolean if
present. Texts are deduplicated across the whole corpus (case and spacing folded): a text
already in the original corpus, a dev file, an excluded file (the unseen test set) or an
earlier writer's file is dropped; a text that writers labelled differently is dropped from
all of them, since one of the labels is wrong and nobody here can say which. Every drop is
reported with its reason. Re-importing a writer replaces its files, so the import is
repeatable while writers are still writing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from flock.jev.questions import (
    ORIGINAL_WRITER,
    PACKAGE_DATA_DIR,
    TRAIN_SUFFIX,
    WRITERS_DIR,
    Question,
    discover,
    line_text,
)

MANIFEST = "manifest.json"


def text_key(text: str) -> str:
    """What counts as the same text: case and runs of whitespace folded."""
    return " ".join(text.casefold().split())


@dataclass(frozen=True, slots=True)
class Dropped:
    writer: str
    question: str
    line: int
    reason: str
    text: str


@dataclass
class ImportReport:
    kept: Counter[tuple[str, str]] = field(default_factory=Counter)  # (writer, question) -> lines
    hard: Counter[tuple[str, str]] = field(default_factory=Counter)
    dropped: list[Dropped] = field(default_factory=list)

    def summary(self) -> str:
        lines = []
        for writer, question in sorted(self.kept):
            lines.append(
                f"{writer:<10} {question:<12} kept {self.kept[writer, question]:>5} "
                f"(hard {self.hard[writer, question]})"
            )
        reasons = Counter((d.writer, d.reason.split(":")[0]) for d in self.dropped)
        for (writer, reason), count in sorted(reasons.items()):
            lines.append(f"{writer:<10} dropped {count:>4}: {reason}")
        if not self.dropped:
            lines.append("nothing dropped")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class _Line:
    writer: str
    question: str
    number: int
    text: str  # what Jev reads: the text, or a pair question's fields joined
    label: str
    hard: bool
    fields: tuple[tuple[str, str], ...] = ()  # a pair question's two fields, as written


def _read_raw(path: Path, writer: str, question: Question, report: ImportReport) -> list[_Line]:
    """Every valid line of a writer's raw file; the invalid ones go into the report."""
    lines: list[_Line] = []
    with path.open(encoding="utf-8", errors="replace") as rows:
        for number, raw in enumerate(rows, start=1):
            if not raw.strip():
                continue

            def drop(reason: str, text: str = "", number: int = number) -> None:
                report.dropped.append(Dropped(writer, question.name, number, reason, text))

            try:
                row = json.loads(raw)
            except json.JSONDecodeError:
                # A writer may be mid-way through writing its last line.
                drop("not valid JSON", raw.strip()[:200])
                continue
            if not isinstance(row, dict):
                drop("not a JSON object", raw.strip()[:200])
                continue
            text, label, hard = line_text(row, question.input_fields), row.get(question.label_field), row.get("hard", False)
            if text is None or not text.strip():
                missing = " or ".join(question.input_fields) or "text"
                drop(f"empty or missing {missing}", raw.strip()[:200])
            elif label not in question.choices:
                drop(f"label not a choice of {question.name}: {label!r}", text)
            elif not isinstance(hard, bool):
                drop(f'"hard" is not true or false: {hard!r}', text)
            else:
                fields = tuple((name, str(row[name]).strip()) for name in question.input_fields)
                lines.append(_Line(writer, question.name, number, text.strip(), str(label), hard, fields))
    return lines


def import_writers(
    sources: dict[str, Path],
    *,
    data_dir: Path = PACKAGE_DATA_DIR,
    exclude: dict[str, list[Path]] | None = None,
    styles: dict[str, str] | None = None,
) -> ImportReport:
    """Copy each writer's ``<question>.jsonl`` from ``sources`` (writer -> folder) into
    ``data_dir/writers/<writer>/``, validated and deduplicated, and update the manifest.

    ``exclude`` maps a question to extra files whose texts must never be trained on (the
    unseen test set); the question's own dev file is always excluded.
    """
    report = ImportReport()
    questions, _ = discover(data_dir)
    exclude = exclude or {}
    root = data_dir / WRITERS_DIR
    for writer in sources:
        if writer == ORIGINAL_WRITER or not writer or "/" in writer or writer.startswith("."):
            raise ValueError(f"not a usable writer name: {writer!r}")

    for name, question in sorted(questions.items()):
        # Texts no writer may contribute: the original corpus, the dev split, excluded files,
        # and the files of writers that are not being re-imported now.
        taken: dict[str, str] = {}
        for example in question.original_examples():
            taken.setdefault(text_key(example.text), ORIGINAL_WRITER)
        held_out = {text_key(e.text) for e in question.dev_examples()}
        for path in exclude.get(name, []):
            held_out |= {text_key(e.text) for e in question.read(path)}
        for writer, path in question.writer_paths:
            if writer not in sources:
                for example in question.read(path, writer=writer):
                    taken.setdefault(text_key(example.text), writer)

        incoming: list[_Line] = []
        for writer, folder in sorted(sources.items()):
            path = folder / f"{name}{TRAIN_SUFFIX}"
            if path.is_file():
                incoming += _read_raw(path, writer, question, report)

        labels_by_key: dict[str, set[str]] = {}
        for line in incoming:
            labels_by_key.setdefault(text_key(line.text), set()).add(line.label)

        kept: dict[str, list[_Line]] = {writer: [] for writer in sources}
        seen: dict[str, str] = {}
        for line in incoming:
            key = text_key(line.text)

            def drop(reason: str, line: _Line = line) -> None:
                report.dropped.append(Dropped(line.writer, line.question, line.number, reason, line.text))

            if key in held_out:
                drop("text of a held-out dev or test line")
            elif key in taken:
                drop(f"duplicate: already in {taken[key]}'s lines")
            elif len(labels_by_key[key]) > 1:
                drop(f"conflict: the same text is labelled {sorted(labels_by_key[key])} by different lines")
            elif key in seen:
                drop(f"duplicate: already in {seen[key]}'s lines")
            else:
                seen[key] = line.writer
                kept[line.writer].append(line)

        for writer, lines in kept.items():
            target = root / writer / f"{name}{TRAIN_SUFFIX}"
            if not lines:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            rows = []
            for line in lines:
                row: dict[str, object] = dict(line.fields) if line.fields else {"text": line.text}
                row[question.label_field] = line.label
                if line.hard:
                    row["hard"] = True
                rows.append(json.dumps(row, ensure_ascii=False) + "\n")
                report.kept[writer, name] += 1
                report.hard[writer, name] += int(line.hard)
            target.write_text("".join(rows), encoding="utf-8")

    _update_manifest(root, sources, report, styles or {})
    return report


def _update_manifest(
    root: Path, sources: dict[str, Path], report: ImportReport, styles: dict[str, str]
) -> None:
    path = root / MANIFEST
    manifest = read_manifest(root.parent)
    writers = manifest.setdefault("writers", {})
    for writer in sources:
        entry = writers.setdefault(writer, {})
        if styles.get(writer):
            entry["style"] = styles[writer]
        entry.setdefault("style", "")
        entry["lines"] = {q: n for (w, q), n in sorted(report.kept.items()) if w == writer}
        entry["hard"] = {q: n for (w, q), n in sorted(report.hard.items()) if w == writer}
        dropped = Counter(d.question for d in report.dropped if d.writer == writer)
        entry["dropped"] = dict(sorted(dropped.items()))
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_manifest(data_dir: Path = PACKAGE_DATA_DIR) -> dict[str, dict]:
    path = data_dir / WRITERS_DIR / MANIFEST
    if not path.is_file():
        return {"writers": {}}
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return manifest if isinstance(manifest, dict) else {"writers": {}}
