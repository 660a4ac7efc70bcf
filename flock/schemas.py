"""The flock's API schemas, and the pieces every app's schemas share (docs/API.md).

Request schemas are strict: a JSON string is never read as a number, nor a number as a
boolean. A field of the wrong JSON type is refused in the action's own words (`says`),
and a missing required field with the words of its schema's REQUIRED, so the typed
schemas keep every message the API has always given. Rules a schema states but the action
judges (lengths, patterns, ranges) are written into the OpenAPI document with `rule()`:
the action still gives its own precise message when they are broken."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar

from ninja import Schema
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    WithJsonSchema,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError, PydanticUndefined, ValidationError

from flock.actions import EDITABLE_TEXT
from flock.brains.registry import SPEC_PATTERN
from flock.personas import TASK_TYPES

# The error type whose message reaches the client as it is (crows_site/api.py).
API_ERROR = "crows"

# No string anywhere in a body may hold NUL (crows_site/parser.py refuses it); this pattern
# says so for a field that must also hold something besides spaces. The actions trim with
# str.strip(), which also takes off U+001C–U+001F and U+0085: JSON Schema's \s (ECMA-262)
# does not count those as spaces, so they are named.
TEXT_PATTERN = r"^[^\u0000]*[^\u0000\s\u001c-\u001f\u0085][^\u0000]*$"
NO_NUL_PATTERN = r"^[^\u0000]*$"

# How long a path or query string may be. daphne (Twisted) drops a request whose request
# line and headers pass 16 KiB without a word, and a proxy in front commonly allows 8 KiB
# for the request line (nginx's default buffer). A client percent-encodes each character
# into up to 12 bytes (4-byte UTF-8, `%F0%9F%90%A6`), so the longest request any operation
# documents stays under 8 KiB: ID_MAX for identifiers and names (the longest stored id is 80
# characters), QUERY_TEXT_MAX for free text (GET /api/crows/{name}/memory?q=).
ID_MAX = 100
QUERY_TEXT_MAX = 500

# No NUL in a path or query: PostgreSQL cannot even compare a string holding one, so the
# API refuses it before any view runs (crows_site/middleware.py).
NUL_FREE = r"^[^\u0000]*$"

# An identifier or name in a path or query; longer is a 400 naming the parameter.
IdParam = Annotated[
    str, StringConstraints(max_length=ID_MAX), WithJsonSchema({"type": "string", "maxLength": ID_MAX, "pattern": NUL_FREE})
]


def _whole(value: Any) -> Any:
    # JSON Schema counts 3.0 as an integer, and some clients write whole numbers so.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer in JSON's sense: 3 or 3.0, never "3" nor true.
WholeNumber = Annotated[StrictInt, BeforeValidator(_whole)]


def says(wrong: str) -> WrapValidator:
    """Refuse a value of the wrong type with `wrong`; `{got}` is the JSON type given,
    `{value}` the value itself (cut to 40 characters)."""

    def check(value: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(value)
        except ValidationError:
            message = wrong.replace("{got}", _json_type(value)).replace("{value}", repr(str(value)[:40]))
            raise PydanticCustomError(API_ERROR, message) from None

    return WrapValidator(check)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return type(value).__name__


def rule(description: str = "", *, default: Any = PydanticUndefined, **json_schema: Any) -> Any:
    """A field's documented constraints (OpenAPI), judged by the action, not by pydantic."""
    return Field(default, description=description or None, json_schema_extra=json_schema or None)


class StrictIn(Schema):
    """A request body. A field the body does not take is refused, naming it, as the
    document says (additionalProperties: false): a misspelt optional field is a 400, never
    quietly dropped. Fields named in REQUIRED must be present and not null; each is
    refused with its own words."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    REQUIRED: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _required(cls, data: Any) -> Any:
        # ninja's Schema hands validators its DjangoGetter around the parsed body.
        raw = getattr(data, "_obj", data)
        if isinstance(raw, dict):
            unknown = [str(key) for key in raw if key not in cls.model_fields]
            if unknown:
                raise PydanticCustomError(API_ERROR, unknown_fields(unknown, taken=list(cls.model_fields)))
            for field, message in cls.REQUIRED.items():
                if raw.get(field) is None:
                    raise PydanticCustomError(API_ERROR, message)
        elif isinstance(raw, (list, str, int, float, bool)) or raw is None:
            raise PydanticCustomError(API_ERROR, "the body must be a JSON object")
        return data


def unknown_fields(unknown: list[str], *, taken: list[str]) -> str:
    """The refusal of fields a body does not take, naming them (cut to 40 characters each,
    as a client may send anything for a key) and what the body does take."""
    names = ", ".join(repr(name[:40]) for name in unknown[:5])
    field = "field" if len(unknown) == 1 else "fields"
    takes = ", ".join(taken) if taken else "no fields (send {})"
    return f"unknown {field} {names}: this body takes {takes}"


class ErrorOut(Schema):
    """Every error: a sentence naming the problem."""

    message: str


class RateLimitedOut(ErrorOut):
    """429: the requester is pranked, or the client sent too many wrong owner tokens; try
    again after `cooldown_s` seconds (also in Retry-After)."""

    cooldown_s: int


class CrowOut(Schema):
    name: str
    epithet: str
    strength: str
    backstory: str
    role: str
    status: str
    model: str
    task_types: list[str]
    # An extension (docs/API.md): the crow has a model of its own; false when `model` is
    # the default brain (CROWS_BRAIN), which it follows when that changes.
    pinned: bool = False


class FlightlogRowOut(Schema):
    provider: str
    model: str
    task_type: str
    calls: int
    tokens_in: int
    tokens_out: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    failure_rate: float
    owner_verdicts: int
    approval_rate: float | None


class FlightlogOut(Schema):
    by_model_and_task_type: list[FlightlogRowOut]


def errors(*statuses: int, write: bool = False) -> dict[int, type[Schema]]:
    """The error answers of an endpoint, for its `response=`: the ones it names, plus the
    ones every /api/ request can get from the owner gate (docs/SECURITY.md): 400 (Host),
    401 (owner token), 403 (foreign Origin, non-loopback without a token), 429 (too many
    wrong owner tokens from the client's address), and for a write 413 (body too large)
    and 415 (not JSON); and 503 when the database is not answering (docs/API.md)."""
    codes = {400, 401, 403, 429, 503, *statuses}
    if write:
        codes |= {413, 415}
    return {code: (RateLimitedOut if code == 429 else ErrorOut) for code in sorted(codes)}


# The provider registry's spec shape, which flock.actions.MODEL_SPEC_RE checks, as the
# document states it: `mock` alone, every other provider with its model (`openai:<model>`,
# `script:<path>`). A spec valid by the document is never refused for its shape; only a
# script file that is missing or broken is (docs/API.md, "Rules no schema states").
MODEL_SPEC = SPEC_PATTERN


def model_spec_pattern(*, blank: bool) -> str:
    """The document's pattern for a brain spec; `blank`: "" (the default brain) too."""
    return f"^(?:{MODEL_SPEC}){'?' if blank else ''}$"


def _crow_patch_document(schema: dict[str, Any]) -> None:
    # The document states what update_crow accepts: at least one field, none of them null,
    # each text within its limit, task types from the vocabulary, a brain spec or "".
    properties: dict[str, Any] = {
        field: {"type": "string", "minLength": 1, "maxLength": limit, "pattern": TEXT_PATTERN}
        for field, limit in EDITABLE_TEXT.items()
    }
    properties["model"] = {
        "type": "string",
        "pattern": model_spec_pattern(blank=True),
        "description": "provider:model (mock, openai:…, anthropic:…, script:<path>), or \"\" for the default brain",
    }
    properties["task_types"] = {"type": "array", "items": {"type": "string", "enum": list(TASK_TYPES)}}
    properties["confirm"] = {
        "type": "boolean",
        "description": "true saves a model whose provider has no key or base URL (otherwise a 409 says why)",
    }
    # At least one of the crow's own fields: `confirm` alone changes nothing.
    changes = [{"type": "object", "required": [field]} for field in properties if field != "confirm"]
    schema.update(additionalProperties=False, anyOf=changes, properties=properties)


class CrowPatchIn(StrictIn):
    """Fields the owner may change (docs/REVIEW.md); each is checked by update_crow, which
    names the exact problem in a 400. Absent fields stay as they are."""

    model_config = ConfigDict(json_schema_extra=lambda schema: _crow_patch_document(schema))

    model: Annotated[StrictStr | None, says("model must be a string, got {got}")] = rule(
        "provider:model (mock, openai:…, anthropic:…, script:<path>), or \"\" for the default brain", default=None
    )
    epithet: Annotated[StrictStr | None, says("epithet must be a string, got {got}")] = None
    strength: Annotated[StrictStr | None, says("strength must be a string, got {got}")] = None
    backstory: Annotated[StrictStr | None, says("backstory must be a string, got {got}")] = None
    persona: Annotated[StrictStr | None, says("persona must be a string, got {got}")] = None
    voice: Annotated[StrictStr | None, says("voice must be a string, got {got}")] = None
    task_types: Annotated[list[StrictStr] | None, says("task_types must be a list of task type names")] = None
    # Not a field of the crow: the owner's yes to saving a model that cannot be called yet.
    confirm: Annotated[StrictBool, says("confirm must be true or false, got {got}")] = False


def _brain_test_document(schema: dict[str, Any]) -> None:
    schema["additionalProperties"] = False
    schema["properties"]["crow"] = {
        "anyOf": [{"type": "string", "pattern": NO_NUL_PATTERN}, {"type": "null"}],
        "description": "a living crow's name (a retired crow has no brain to test: 404)",
    }
    schema["properties"]["model"] = {
        "anyOf": [{"type": "string", "pattern": model_spec_pattern(blank=True)}, {"type": "null"}],
        "description": "a brain spec to test (mock, openai:…, anthropic:…, script:<path>)",
    }
    # One brain at a time: not a crow and a model both.
    schema["not"] = {
        "required": ["crow", "model"],
        "properties": {"crow": {"type": "string", "minLength": 1}, "model": {"type": "string", "minLength": 1}},
    }


class BrainTestIn(StrictIn):
    """Which brain to test: a crow's (`crow`), a spec (`model`), or neither: the default."""

    model_config = ConfigDict(json_schema_extra=lambda schema: _brain_test_document(schema))

    crow: Annotated[StrictStr | None, says("crow must be a string, got {got}")] = None
    model: Annotated[StrictStr | None, says("model must be a string, got {got}")] = None


class BrainTestOut(Schema):
    ok: bool
    spec: str
    provider: str
    model: str
    latency_ms: float
    reply: str
    error: str
    mock: bool
    # An extension (docs/API.md): what a connected brain's answer means, e.g. a reasoning
    # model that spent the test's tokens thinking; "" when there is nothing to add.
    note: str = ""


class BrainsOut(Schema):
    default: str
    default_is_mock: bool
    crows: list[CrowOut]


ROWS_MAX = 200

# A log's `?limit=` (GET /api/flights, GET /api/jev/tags): out of range is a 400 naming
# it, not quietly clamped.
RowsLimit = Annotated[
    int,
    Field(ge=1, le=ROWS_MAX, description="rows, newest first (default 50)"),
    says(f"limit must be a whole number from 1 to {ROWS_MAX}, got {{value}}"),
]


class JevTagOut(Schema):
    """One answer of Jev's, as its tag log keeps it (docs/JEV.md)."""

    question: str = Field(description="what Jev was asked: kind, expectation, triage_mode, crow_fit, …")
    subject: str = Field(description="what was tagged: a msg_id, an item_id, …")
    text: str = Field(description="the words Jev read")
    choice: str = Field(description="the answer that stood")
    band: str = Field(description="high (the local model was sure) or unsure")
    probs: dict[str, float] = Field(description="the local model's probability for every choice")
    source: str = Field(description="local (the model) or llm (the optional second opinion gave `choice`)")
    local_choice: str = Field(description="the local model's own pick")
    outcome: dict[str, Any] = Field(description="what was finally used, e.g. a message's kind and how it was decided")
    impl: str
    version: str
    latency_ms: float
    at: str
