"""Questions are data: each ``<name>.jsonl`` in a data directory is one question.

Layout of a data directory (the built-in one is ``flock/jev/data/``):

``<name>.jsonl``
    Training examples, one JSON object a line: ``{"text": ..., "<label field>": ...}``.
``<name>.dev.jsonl`` (optional)
    Held-back examples in the same shape. Never trained on; the temperature is fitted on
    them and jev_eval reports on them.
``<name>.json`` (optional)
    Metadata: ``label_field`` (default: the question's name), ``high_threshold`` (default
    0.8), ``choices`` (an ordering; default: sorted labels), ``description``, ``rules``
    (how the labels are given, a string or a list of lines, for the LLM second opinion) and
    ``punctuation_tokens`` (default false: whether ? ! : and " are word tokens, model.py)
    and ``features`` (default ``"standard"``, model.py's union; ``"pair"``, for a pair
    question only, reads its two messages apart: pair_features.py).
``input_fields`` in the metadata (optional)
    Two field names (``["expectation", "message"]``): the question reads a pair of texts.
    Its lines hold those two fields instead of ``text``, and they are joined by
    ``pairs.pair_text``, the same function the caller uses at ask time.
``writers/<writer>/<name>.jsonl`` (optional)
    More training examples, each file written by one independent writer, in the same shape
    plus an optional ``"hard": true`` on lines the writer meant as boundary cases.
    ``<name>.jsonl`` itself counts as the writer ``original``. Knowing who wrote what lets
    training calibrate on out-of-writer predictions and jev_eval hold each writer out
    (docs/JEV.md, "Writers"). ``writers/manifest.json`` names the writers and their styles.

A question may have no ``<name>.jsonl`` of its own when its metadata lists its
``choices``: all its lines are then its writers' (``expectation_met``).

Blank lines are skipped; every other line must be a JSON object of that shape.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from flock.errors import CrowsError
from flock.jev.pairs import PAIR_VERSION, pair_text

logger = logging.getLogger(__name__)

PACKAGE_DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_HIGH_THRESHOLD = 0.8
TRAIN_SUFFIX = ".jsonl"
DEV_SUFFIX = ".dev.jsonl"
META_SUFFIX = ".json"
# The metadata's ``features``: model.py's standard union, or pair_features.py's blocks.
FEATURES_STANDARD = "standard"
FEATURES_PAIR = "pair"


class JevError(CrowsError):
    """Base of Jev's errors: bad question data, an unknown question."""


class JevDataError(JevError):
    """A question's data files cannot be read; the message names the file and line."""


class UnknownQuestionError(JevError):
    status = 404


ORIGINAL_WRITER = "original"
WRITERS_DIR = "writers"


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    label: str
    writer: str = ORIGINAL_WRITER
    hard: bool = False


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
    # (writer, file) for every writer's file of this question, sorted by writer.
    writer_paths: tuple[tuple[str, Path], ...] = ()
    # How the labels are given, in words (``rules`` in the metadata): what the optional LLM
    # second opinion is told along with the choices.
    rules: str = ""
    # ``punctuation_tokens`` in the metadata: ? ! : and " become word tokens (model.py).
    punctuation_tokens: bool = False
    # ``input_fields`` in the metadata: the two fields a pair question's lines hold.
    input_fields: tuple[str, ...] = ()
    # ``features`` in the metadata: FEATURES_STANDARD or FEATURES_PAIR (model.build_pipeline).
    features: str = FEATURES_STANDARD

    def files(self) -> tuple[Path, ...]:
        own = tuple(p for p in (self.train_path, self.dev_path, self.meta_path) if p is not None and p.is_file())
        return own + tuple(path for _, path in self.writer_paths)

    def data_hash(self) -> str:
        """SHA-256 over the question's files: any edit to data or metadata changes it."""
        digest = hashlib.sha256(self.name.encode())
        if self.input_fields:
            # How a pair becomes one text is code, not data: its version retrains too.
            digest.update(b"\0" + PAIR_VERSION.encode())
        for path in self.files():
            # The writer's folder is part of the name: moving a file between writers retrains.
            name = path.name if path.parent.parent.name != WRITERS_DIR else f"{path.parent.name}/{path.name}"
            digest.update(b"\0" + name.encode() + b"\0")
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def writers(self) -> tuple[str, ...]:
        own = (ORIGINAL_WRITER,) if self.train_path.is_file() else ()
        return (*own, *(writer for writer, _ in self.writer_paths))

    def train_examples(self) -> list[Example]:
        """Every writer's examples: the original ``<name>.jsonl`` first, then each writer's."""
        examples = self.original_examples()
        for writer, path in self.writer_paths:
            examples += self.read(path, writer=writer)
        return examples

    def original_examples(self) -> list[Example]:
        """The lines of ``<name>.jsonl``; none for a question only its writers wrote."""
        return self.read(self.train_path) if self.train_path.is_file() else []

    def dev_examples(self) -> list[Example]:
        return self.read(self.dev_path) if self.dev_path else []

    def read(self, path: Path, *, writer: str = ORIGINAL_WRITER) -> list[Example]:
        """A file of this question's lines (a pair question's two fields joined)."""
        return read_examples(path, self.label_field, writer=writer, input_fields=self.input_fields)


def line_text(row: dict[str, object], input_fields: tuple[str, ...] = ()) -> str | None:
    """The text a line gives Jev: its ``text``, or a pair question's two fields joined by
    ``pair_text``; None when a field is missing or not a non-empty string."""
    if not input_fields:
        text = row.get("text")
        return text if isinstance(text, str) else None
    parts = [row.get(name) for name in input_fields]
    if not all(isinstance(part, str) and part.strip() for part in parts):
        return None
    first, second = (str(part) for part in parts)
    return pair_text(first, second)


def read_examples(
    path: Path, label_field: str, *, writer: str = ORIGINAL_WRITER, input_fields: tuple[str, ...] = ()
) -> list[Example]:
    """Read ``{"text", label_field}`` lines (or a pair question's ``input_fields``), failing
    loudly with the file and line number."""
    examples: list[Example] = []
    # utf-8-sig: a byte-order mark (Windows editors, spreadsheet exports) is not a text.
    with path.open(encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise JevDataError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise JevDataError(f"{path}:{number}: expected a JSON object")
            text, label = line_text(row, input_fields), row.get(label_field)
            if text is None or not isinstance(label, str) or not label:
                fields = " and ".join(f'"{name}"' for name in input_fields or ("text",))
                raise JevDataError(
                    f'{path}:{number}: needs a string {fields} and a non-empty string "{label_field}"'
                )
            hard = row.get("hard", False)
            if not isinstance(hard, bool):
                raise JevDataError(f'{path}:{number}: "hard" must be true or false')
            examples.append(Example(text, label, writer, hard))
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

    input_fields = _input_fields(meta, meta_path)
    writer_paths = writer_files(folder, name)
    ordering = meta.get("choices")
    if train_path.is_file():
        labels = {e.label for e in read_examples(train_path, label_field, input_fields=input_fields)}
        known = f"not in {train_path.name}"
    elif isinstance(ordering, list):
        # A question only its writers write: its metadata names the choices they may use
        # (with none of their lines imported yet it loads, so the import can find it, and
        # asking it says it has no lines).
        labels = {str(choice) for choice in ordering}
        known = f"not among the choices in {meta_path.name}"
    else:
        raise JevDataError(f"{train_path}: no such file, and no choices in {meta_path.name} for its writers")
    used: set[str] = set()
    for writer, path in writer_paths:
        found = {e.label for e in read_examples(path, label_field, writer=writer, input_fields=input_fields)}
        used |= found
        strangers = found - labels
        if strangers:
            raise JevDataError(f"{path}: labels {known}: {sorted(strangers)}")
    if not train_path.is_file() and writer_paths and len(used) < 2:
        raise JevDataError(f"{folder / WRITERS_DIR}: {name}'s writers use fewer than two choices: {sorted(used)}")
    if len(labels) < 2:
        raise JevDataError(f"{train_path}: a question needs at least two choices, found {sorted(labels)}")
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
        writer_paths=writer_paths,
        rules=_rules(meta, meta_path),
        punctuation_tokens=_flag(meta, "punctuation_tokens", meta_path),
        input_fields=input_fields,
        features=_features(meta, meta_path, input_fields),
    )


def _features(meta: dict[str, object], meta_path: Path, input_fields: tuple[str, ...]) -> str:
    features = meta.get("features", FEATURES_STANDARD)
    if features not in (FEATURES_STANDARD, FEATURES_PAIR):
        raise JevDataError(f"{meta_path}: features must be {FEATURES_STANDARD!r} or {FEATURES_PAIR!r}")
    if features == FEATURES_PAIR and not input_fields:
        raise JevDataError(f"{meta_path}: features {FEATURES_PAIR!r} needs two input_fields")
    return str(features)


def _input_fields(meta: dict[str, object], meta_path: Path) -> tuple[str, ...]:
    fields = meta.get("input_fields", [])
    if fields == []:
        return ()
    if not isinstance(fields, list) or len(fields) != 2 or not all(isinstance(f, str) and f for f in fields):
        raise JevDataError(f"{meta_path}: input_fields must name two fields")
    return (str(fields[0]), str(fields[1]))


def _flag(meta: dict[str, object], key: str, meta_path: Path) -> bool:
    value = meta.get(key, False)
    if not isinstance(value, bool):
        raise JevDataError(f"{meta_path}: {key} must be true or false")
    return value


def _rules(meta: dict[str, object], meta_path: Path) -> str:
    rules = meta.get("rules", "")
    if isinstance(rules, list) and all(isinstance(line, str) for line in rules):
        return "\n".join(rules)
    if not isinstance(rules, str):
        raise JevDataError(f"{meta_path}: rules must be a string or a list of strings")
    return rules


def writer_files(folder: Path, name: str) -> tuple[tuple[str, Path], ...]:
    """(writer, path) of every ``writers/<writer>/<name>.jsonl`` under ``folder``, by writer."""
    root = folder / WRITERS_DIR
    if not root.is_dir():
        return ()
    found = []
    for path in sorted(root.glob(f"*/{name}{TRAIN_SUFFIX}")):
        writer = path.parent.name
        if writer == ORIGINAL_WRITER:
            raise JevDataError(
                f"{path}: the writer name {ORIGINAL_WRITER!r} is taken by {name}{TRAIN_SUFFIX}"
            )
        found.append((writer, path))
    return tuple(found)


def discover(data_dir: Path) -> tuple[dict[str, Question], dict[str, JevDataError]]:
    """Every ``<name>.jsonl`` (not ``.dev.jsonl``) under ``data_dir`` becomes a question.

    Returns the questions that loaded and, apart, the error of each one that did not: a
    broken custom question must not take ``kind`` down with it, since every posted message
    is tagged. Asking a broken question raises its error.
    """
    found: dict[str, Question] = {}
    broken: dict[str, JevDataError] = {}
    # A question only its writers wrote has its metadata but no `<name>.jsonl`.
    writers_only = {
        meta.with_name(meta.name.removesuffix(META_SUFFIX) + TRAIN_SUFFIX) for meta in data_dir.glob(f"*{META_SUFFIX}")
    }
    for train_path in sorted(set(data_dir.glob(f"*{TRAIN_SUFFIX}")) | writers_only):
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
