"""Questions are data: each ``<name>.jsonl`` in a data directory is one question.

Layout of a data directory (the built-in one is ``flock/jev/data/``):

``<name>.jsonl``
    Training examples, one JSON object a line: ``{"text": ..., "<label field>": ...}``.
``<name>.dev.jsonl`` (optional)
    Held-back examples in the same shape. Never trained on; the temperature is fitted on
    them and jev_eval reports on them.
``<name>.json`` (optional)
    Metadata: ``label_field`` (default: the question's name), ``high_threshold`` (default
    0.8), ``choices`` (an ordering; default: sorted labels) and ``description``.

Blank lines are skipped; every other line must be a JSON object of that shape.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from flock.errors import CrowsError

logger = logging.getLogger(__name__)

PACKAGE_DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_HIGH_THRESHOLD = 0.8
TRAIN_SUFFIX = ".jsonl"
DEV_SUFFIX = ".dev.jsonl"
META_SUFFIX = ".json"


class JevError(CrowsError):
    """Base of Jev's errors: bad question data, an unknown question."""


class JevDataError(JevError):
    """A question's data files cannot be read; the message names the file and line."""


class UnknownQuestionError(JevError):
    status = 404


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: str


@dataclass(frozen=True, slots=True)
class Question:
    name: str
    choices: tuple[str, ...]
    high_threshold: float
    label_field: str
    description: str
    train_path: Path
    dev_path: Path | None
    meta_path: Path | None

    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.train_path, self.dev_path, self.meta_path) if p is not None)

    def data_hash(self) -> str:
        """SHA-256 over the question's files: any edit to data or metadata changes it."""
        digest = hashlib.sha256(self.name.encode())
        for path in self.files():
            digest.update(b"\0" + path.name.encode() + b"\0")
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def train_examples(self) -> list[Example]:
        return read_examples(self.train_path, self.label_field)

    def dev_examples(self) -> list[Example]:
        return read_examples(self.dev_path, self.label_field) if self.dev_path else []


def read_examples(path: Path, label_field: str) -> list[Example]:
    """Read ``{"text", label_field}`` lines, failing loudly with the file and line number."""
    examples: list[Example] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise JevDataError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise JevDataError(f"{path}:{number}: expected a JSON object")
            text, label = row.get("text"), row.get(label_field)
            if not isinstance(text, str) or not isinstance(label, str) or not label:
                raise JevDataError(
                    f'{path}:{number}: needs a string "text" and a non-empty string "{label_field}"'
                )
            examples.append(Example(text, label))
    return examples


def _read_meta(path: Path) -> dict[str, object]:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise JevDataError(f"{path}: not valid JSON ({exc.msg})") from None
    if not isinstance(meta, dict):
        raise JevDataError(f"{path}: expected a JSON object")
    return meta


def load_question(train_path: Path) -> Question:
    name = train_path.name.removesuffix(TRAIN_SUFFIX)
    folder = train_path.parent
    dev_path = folder / f"{name}{DEV_SUFFIX}"
    meta_path = folder / f"{name}{META_SUFFIX}"
    meta = _read_meta(meta_path) if meta_path.exists() else {}

    label_field = meta.get("label_field", name)
    threshold = meta.get("high_threshold", DEFAULT_HIGH_THRESHOLD)
    if not isinstance(label_field, str) or not label_field:
        raise JevDataError(f"{meta_path}: label_field must be a non-empty string")
    if not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise JevDataError(f"{meta_path}: high_threshold must be a number in (0, 1]")

    labels = {example.label for example in read_examples(train_path, label_field)}
    if len(labels) < 2:
        raise JevDataError(f"{train_path}: a question needs at least two choices, found {sorted(labels)}")
    ordering = meta.get("choices")
    if ordering is None:
        choices = tuple(sorted(labels))
    elif isinstance(ordering, list) and set(ordering) == labels and len(ordering) == len(labels):
        choices = tuple(str(choice) for choice in ordering)
    else:
        raise JevDataError(f"{meta_path}: choices must list exactly the labels in {train_path.name}")

    return Question(
        name=name,
        choices=choices,
        high_threshold=float(threshold),
        label_field=label_field,
        description=str(meta.get("description", "")),
        train_path=train_path,
        dev_path=dev_path if dev_path.exists() else None,
        meta_path=meta_path if meta_path.exists() else None,
    )


def discover(data_dir: Path) -> tuple[dict[str, Question], dict[str, JevDataError]]:
    """Every ``<name>.jsonl`` (not ``.dev.jsonl``) under ``data_dir`` becomes a question.

    Returns the questions that loaded and, apart, the error of each one that did not: a
    broken custom question must not take ``kind`` down with it, since every posted message
    is tagged. Asking a broken question raises its error.
    """
    found: dict[str, Question] = {}
    broken: dict[str, JevDataError] = {}
    for train_path in sorted(data_dir.glob(f"*{TRAIN_SUFFIX}")):
        if train_path.name.endswith(DEV_SUFFIX):
            continue
        try:
            question = load_question(train_path)
        except JevDataError as exc:
            logger.error("jev: question %s is broken: %s", train_path.name, exc.message)
            broken[train_path.name.removesuffix(TRAIN_SUFFIX)] = exc
        else:
            found[question.name] = question
    return found, broken
