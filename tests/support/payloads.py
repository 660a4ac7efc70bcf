"""Checking an event's payload against its registered TypedDict (the one statement of its
fields, in each app's `payloads` module): its keys, required and optional, and the type of
each value, read with `typing.get_type_hints`."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import flock.payloads  # noqa: F401  (registers the flock's events)
import nests.payloads  # noqa: F401  (registers the nests' events)
import trust.payloads  # noqa: F401  (registers the trust's events)
from flock.events import ENVELOPE_FIELDS, EVENT_TYPES


def fields(payload: type) -> frozenset[str]:
    """Every key a TypedDict declares, required or optional."""
    return frozenset(payload.__required_keys__ | payload.__optional_keys__)  # type: ignore[attr-defined]


def value_problem(value: Any, hint: Any, where: str) -> str:
    """Why `value` is not of the annotated type `hint`, or ""."""
    if hint is Any or hint is object:
        return ""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        problems = [value_problem(value, arm, where) for arm in get_args(hint)]
        return "" if "" in problems else problems[0]
    if hint is type(None):
        return "" if value is None else f"{where}: {value!r} is not null"
    if is_typeddict(hint):
        return typeddict_problem(value, hint, where)
    if hint is bool:
        return "" if type(value) is bool else f"{where}: {value!r} is not a bool"
    if hint is int:
        return "" if type(value) is int else f"{where}: {value!r} is not an int"
    if hint is float:
        return "" if type(value) in (int, float) else f"{where}: {value!r} is not a number"
    if hint is str:
        return "" if isinstance(value, str) else f"{where}: {value!r} is not a string"
    if origin is list:
        if not isinstance(value, list):
            return f"{where}: {value!r} is not a list"
        (item,) = get_args(hint) or (Any,)
        return next((p for n, v in enumerate(value) if (p := value_problem(v, item, f"{where}[{n}]"))), "")
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where}: {value!r} is not an object"
        _, item = get_args(hint) or (str, Any)
        return next((p for k, v in value.items() if (p := value_problem(v, item, f"{where}.{k}"))), "")
    raise AssertionError(f"{where}: no check written for the annotation {hint!r}")


def typeddict_problem(value: Any, payload: type, where: str, *, envelope: frozenset[str] = frozenset()) -> str:
    if not isinstance(value, dict):
        return f"{where}: {value!r} is not an object"
    required: frozenset[str] = payload.__required_keys__  # type: ignore[attr-defined]
    missing = required - value.keys()
    undeclared = value.keys() - fields(payload) - envelope
    if missing or undeclared:
        return f"{where} ({payload.__qualname__}): missing {sorted(missing)}, undeclared {sorted(undeclared)}"
    hints = get_type_hints(payload)
    return next((p for k in value.keys() & hints.keys() if (p := value_problem(value[k], hints[k], f"{where}.{k}"))), "")


def assert_payload(name: str, data: dict[str, Any]) -> None:
    """`data`, as the stream carried event `name`, matches the event's TypedDict: every
    required key, no key it does not declare (besides `ts`, `list_id`, `nest_id`, which
    the stream adds), each value of its declared type, and `ts` a string."""
    assert name in EVENT_TYPES, f"{name!r} is not a registered event"
    problem = typeddict_problem(data, EVENT_TYPES[name].payload, name, envelope=ENVELOPE_FIELDS)
    assert not problem, problem
    assert isinstance(data.get("ts"), str), (name, data.get("ts"))


