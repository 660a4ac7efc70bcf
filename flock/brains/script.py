"""The scripted brain: `script:<path to a JSON file>`, for demos, tests and prompt work.

The file is a JSON list of rules, tried in order; the first that matches answers:

    {"crow": "Rook" | "*", "task": "chat", "match": "regex", "reply": "text", "once": false}

- `crow` (required): the crow's name (any case) or `*` for every crow.
- `task` (optional): one of TASKS below; absent means any task.
- `match` (optional): a regular expression searched case-insensitively in the text of the
  message that triggered the call (for a list task, the item or subtask text).
- `reply` (required): the reply; `{msg_id}`, `{refers_to}` and `{author}` are replaced with
  the triggering message's (`{{` and `}}` are not needed: only those three names are
  replaced, so other braces stay as written).
- `once` (optional): true makes the rule answer only its first match in this process.

No rule matches: the mock brain answers. A file that cannot be read, is not a list of
such rules, or has a bad regex is refused with `ScriptError` (a `BrainSpecError`) naming
the file and the rule; `check_brain_spec` runs at start-up for CROWS_BRAIN so a bad file
stops the server.

Where a script may come from (docs/SECURITY.md "Scripted brains"): the operator's own
CROWS_BRAIN may name a file anywhere, as the operator chose it; any other spec (a crow's
model, a brain test) names a file inside CROWS_SCRIPT_DIR, and with it unset is refused.
Either way the file must be a regular file of at most SCRIPT_MAX_BYTES, opened without
blocking and read no further than that: `script:/dev/zero` or a FIFO must never hold a
request or eat memory. A spec from the API that breaks the rule gets the same sentence
whatever is at the path, so the answer tells nothing about the server's files.
docs/BRAINS.md has examples.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flock.brains.config import setting
from flock.brains.mock import MockBrain
from flock.brains.prompts import estimate_tokens
from flock.brains.types import BrainReply, BrainRequest, BrainSpecError

PROVIDER = "script"
TASKS: tuple[str, ...] = ("chat", "triage", "answer", "subtask", "merge", "synthesise", "banter")
RULE_KEYS = frozenset({"crow", "task", "match", "reply", "once"})
_PLACEHOLDER = re.compile(r"\{(msg_id|refers_to|author)\}")
SCRIPT_MAX_BYTES = 1024 * 1024


class ScriptError(BrainSpecError):
    """A script file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Rule:
    crow: str
    task: str
    match: re.Pattern[str] | None
    reply: str
    once: bool
    index: int

    def fits(self, crow: str, task: str, text: str) -> bool:
        if self.crow != "*" and self.crow.lower() != crow.lower():
            return False
        if self.task and self.task != task:
            return False
        return self.match is None or self.match.search(text) is not None


def _rule(path: Path, index: int, raw: Any) -> Rule:
    where = f"{path}: rule {index + 1}"
    if not isinstance(raw, dict):
        raise ScriptError(f"{where} must be a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - RULE_KEYS
    if unknown:
        raise ScriptError(f"{where} has unknown keys {sorted(unknown)}; use {sorted(RULE_KEYS)}")
    crow = raw.get("crow")
    if not isinstance(crow, str) or not crow.strip():
        raise ScriptError(f'{where} needs "crow": a crow\'s name or "*"')
    task = raw.get("task", "")
    if task is None:
        task = ""
    if not isinstance(task, str) or (task and task not in TASKS):
        raise ScriptError(f'{where}: "task" must be one of {", ".join(TASKS)}, got {task!r}')
    reply = raw.get("reply")
    if not isinstance(reply, str) or not reply.strip():
        raise ScriptError(f'{where} needs "reply": a non-empty string')
    once = raw.get("once", False)
    if not isinstance(once, bool):
        raise ScriptError(f'{where}: "once" must be true or false')
    pattern = raw.get("match")
    compiled = None
    if pattern is not None:
        if not isinstance(pattern, str):
            raise ScriptError(f'{where}: "match" must be a string (a regular expression)')
        try:
            compiled = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ScriptError(f'{where}: "match" is not a valid regular expression: {exc}') from None
    return Rule(crow=crow.strip(), task=task, match=compiled, reply=reply, once=once, index=index)


def script_rule() -> str:
    """The one sentence every script spec that breaks the place-and-size rule gets, the
    same whether the path exists or not."""
    if not str(setting("CROWS_SCRIPT_DIR") or "").strip():
        return (
            "script: brains are refused here: CROWS_SCRIPT_DIR is not set (a script: brain other than "
            "CROWS_BRAIN's own must be a regular file of at most 1 MiB inside it)"
        )
    return "script: must name a regular file of at most 1 MiB inside CROWS_SCRIPT_DIR, such as script:rook.json"


def _inside_script_dir(path_text: str) -> str:
    """The real path `path_text` names inside CROWS_SCRIPT_DIR (relative to it, or
    absolute), symbolic links followed; ScriptError(script_rule()) when there is no such
    directory or the path leads out of it."""
    directory = str(setting("CROWS_SCRIPT_DIR") or "").strip()
    if not directory:
        raise ScriptError(script_rule())
    root = os.path.realpath(os.path.expanduser(directory))
    real = os.path.realpath(os.path.join(root, path_text))  # an absolute path_text replaces root
    if os.path.commonpath([root, real]) != root or real == root:
        raise ScriptError(script_rule())
    return real


def _read_bounded(path: str) -> bytes:
    """The bytes of a regular file of at most SCRIPT_MAX_BYTES. Opened non-blocking, so a
    FIFO does not wait for a writer, and checked on the open descriptor (what is read is
    what was checked); never more than SCRIPT_MAX_BYTES + 1 bytes are read, so a file that
    grows meanwhile is refused too. OSError and ValueError say what is wrong."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("is not a regular file")
        if info.st_size > SCRIPT_MAX_BYTES:
            raise ValueError(f"is larger than {SCRIPT_MAX_BYTES // (1024 * 1024)} MiB")
        chunks: list[bytes] = []
        left = SCRIPT_MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise ValueError(f"is larger than {SCRIPT_MAX_BYTES // (1024 * 1024)} MiB")
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_rules(path_text: str, *, operator: bool = True) -> list[Rule]:
    """Read and check a script file; ScriptError names the file and what is wrong.

    `operator`: the spec is the operator's own CROWS_BRAIN, whose file may be anywhere
    (a relative path from the working directory) and whose problems are told in detail.
    Otherwise the file must be inside CROWS_SCRIPT_DIR (a relative path from there), and
    every way of breaking that rule (outside, missing, unreadable, not a regular file,
    too large) gets the one sentence of script_rule()."""
    if not path_text.strip():
        raise ScriptError("script: needs a path to a JSON file, e.g. script:demo/rook.json")
    if operator:
        path = Path(path_text.strip()).expanduser()
        try:
            data = _read_bounded(str(path))
        except FileNotFoundError:
            raise ScriptError(f"{path}: the brain script file does not exist") from None
        except OSError as exc:
            raise ScriptError(f"{path}: the brain script file cannot be read: {exc.strerror}") from None
        except ValueError as exc:
            raise ScriptError(f"{path}: the brain script file {exc}") from None
    else:
        real = _inside_script_dir(path_text.strip())
        path = Path(path_text.strip())
        try:
            data = _read_bounded(real)
        except (OSError, ValueError):
            raise ScriptError(script_rule()) from None
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{path}: the brain script file cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{path}: the brain script is not valid JSON: {exc}") from None
    if not isinstance(raw, list):
        raise ScriptError(f"{path}: the brain script must be a JSON list of rules")
    return [_rule(path, i, r) for i, r in enumerate(raw)]


def trigger_of(request: BrainRequest) -> dict[str, str]:
    """What triggered the call: the chatroom puts the triggering message in the context
    (`trigger_*`); a list task is triggered by its item (or subtask) text."""
    ctx = request.context or {}
    text = ctx.get("trigger_text")
    if text is None:
        text = ctx.get("subtask") or ctx.get("item_text")
    if text is None:
        users = [m.get("content", "") for m in request.messages if m.get("role") == "user"]
        text = users[-1] if users else ""
    return {
        "msg_id": str(ctx.get("trigger_msg_id") or ctx.get("msg_id") or ctx.get("item_id") or ""),
        "refers_to": str(ctx.get("trigger_refers_to") or ""),
        "author": str(ctx.get("trigger_author") or ctx.get("requester") or ""),
        "text": str(text),
    }


class ScriptBrain:
    """A brain that answers from a rule file, and hands everything else to the mock."""

    provider = PROVIDER

    def __init__(self, path: str, rules: list[Rule]) -> None:
        self.path = path
        self.model = path
        self.rules = rules
        self._spent: set[int] = set()
        self._lock = threading.Lock()
        self._mock = MockBrain(model="mock")

    def _pick(self, crow: str, task: str, text: str) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if rule.index in self._spent or not rule.fits(crow, task, text):
                    continue
                if rule.once:
                    self._spent.add(rule.index)
                return rule
        return None

    def think(self, request: BrainRequest) -> BrainReply:
        started = time.perf_counter()
        trigger = trigger_of(request)
        rule = self._pick(request.persona.name, request.task, trigger["text"])
        if rule is None:
            return self._mock.think(request)
        text = _PLACEHOLDER.sub(lambda m: trigger[m.group(1)], rule.reply)
        prompt = " ".join(str(m.get("content", "")) for m in request.messages)
        return BrainReply(
            ok=True,
            text=text,
            tokens_in=estimate_tokens(prompt) + estimate_tokens(request.system),
            tokens_out=estimate_tokens(text),
            provider=PROVIDER,
            model=self.path,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )
