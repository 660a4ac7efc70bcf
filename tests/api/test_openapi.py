"""The API described exactly (docs/API.md): typed schemas, every error status in the
OpenAPI document, the event stream described, the docs page working offline."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.django_db

GATE = {"400", "401", "403", "429"}
WRITE = {"413", "415"}


@pytest.fixture
def document(client) -> dict:
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def operations(document: dict):
    for path, item in document["paths"].items():
        for method, op in item.items():
            yield path, method, op


def test_every_operation_lists_the_gate_errors_and_writes_list_413_and_415(document):
    seen = 0
    for path, method, op in operations(document):
        codes = set(op["responses"])
        assert GATE <= codes, (method, path, codes)
        if method in ("post", "put", "patch", "delete"):
            assert WRITE <= codes, (method, path, codes)
        for code, answer in op["responses"].items():
            if code.startswith(("4", "5")):
                schema = answer["content"]["application/json"]["schema"]
                assert "$ref" in schema and schema["$ref"].split("/")[-1] in ("ErrorOut", "RateLimitedOut")
        seen += 1
    assert seen >= 13


def test_the_errors_each_endpoint_can_give_are_listed(document):
    paths = document["paths"]
    assert {"404", "429"} <= set(paths["/api/lists"]["post"]["responses"])
    assert {"404", "409", "429"} <= set(paths["/api/nests/{nest_id}/messages"]["post"]["responses"])
    assert "409" in paths["/api/nests"]["post"]["responses"]
    # 409: an overrule of a verdict that was not auto, or is overruled already.
    assert {"404", "409"} <= set(paths["/api/verdicts"]["post"]["responses"])
    assert "503" in paths["/api/events"]["get"]["responses"]
    assert "404" in paths["/api/lists/{list_id}"]["get"]["responses"]
    assert paths["/api/lists"]["post"]["responses"]["429"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "RateLimitedOut"
    )


def _untyped(schema: dict, components: dict, where: str, found: list[str]) -> None:
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        _untyped(components[name], components, name, found)
        return
    if not any(k in schema for k in ("type", "anyOf", "oneOf", "allOf", "enum", "const")):
        found.append(where)
    for name, prop in schema.get("properties", {}).items():
        _untyped(prop, components, f"{where}.{name}", found)
    for key in ("anyOf", "oneOf", "allOf"):
        for i, sub in enumerate(schema.get(key, [])):
            _untyped(sub, components, f"{where}[{i}]", found)
    if isinstance(schema.get("items"), dict):
        _untyped(schema["items"], components, f"{where}[]", found)


def test_no_request_or_response_body_is_untyped(document):
    components = document["components"]["schemas"]
    found: list[str] = []
    for path, method, op in operations(document):
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            _untyped(body, components, f"{method} {path} body", found)
        for code, answer in op["responses"].items():
            for media, content in answer.get("content", {}).items():
                if media == "application/json":
                    _untyped(content["schema"], components, f"{method} {path} {code}", found)
    assert found == []


def test_request_schemas_state_their_rules(document):
    components = document["components"]["schemas"]
    verdict = components["VerdictIn"]
    assert verdict["required"] == ["item_id", "target", "approve"]
    assert verdict["properties"]["approve"]["type"] == "boolean"
    assert verdict["properties"]["target"]["enum"] == ["triage", "output"]
    nest = components["NestIn"]["properties"]
    assert nest["crows"]["maxItems"] == 8 and nest["crows"]["uniqueItems"] is True
    assert components["MessageIn"]["properties"]["text"]["maxLength"] == 2000
    assert components["BudgetIn"]["properties"]["exchanges"]["anyOf"][0]["type"] == "integer"


# The longest request line a client may send by the document, every path and query string
# at its maxLength in 4-byte UTF-8 (12 bytes a character, percent-encoded): it must fit the
# 8 KiB a proxy commonly allows, well under daphne's 16 KiB for the line and its headers.
REQUEST_LINE_BUDGET = 8 * 1024


def _longest(schema: dict) -> int:
    schema = next((s for s in schema.get("anyOf", []) if s.get("type") != "null"), schema)
    if schema.get("type") == "string" or "enum" in schema:
        if "enum" in schema:
            return max(len(str(v)) for v in schema["enum"] if v is not None)
        assert "maxLength" in schema, schema
        return 12 * schema["maxLength"]
    if schema.get("type") == "integer":
        assert "maximum" in schema and "minimum" in schema, schema
        return max(len(str(schema["maximum"])), len(str(schema["minimum"])))
    raise AssertionError(f"a parameter of no known shape: {schema}")


def test_every_request_the_document_allows_fits_a_request_line(document):
    for path, method, op in operations(document):
        line = f"{method.upper()} {path} HTTP/1.1"
        query = []
        for parameter in op.get("parameters", []):
            if parameter["in"] == "path":
                line = line.replace("{" + parameter["name"] + "}", "x" * _longest(parameter["schema"]))
            elif parameter["in"] == "query":
                query.append(f"{parameter['name']}={'x' * _longest(parameter['schema'])}")
        longest = len(line) + len("?" + "&".join(query))
        assert longest <= REQUEST_LINE_BUDGET, (method, path, longest)


def test_the_owner_token_is_the_documents_security_and_optional(document):
    assert document["components"]["securitySchemes"]["owner_token"]["scheme"] == "bearer"
    # The token when the server has one; nothing on a loopback server without one.
    assert document["security"] == [{"owner_token": []}, {}]


def test_the_event_stream_is_described(document):
    stream = document["paths"]["/api/events"]["get"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]
    names = {p["name"] for p in stream["parameters"]}
    assert names == {"since", "list_id", "nest_id", "Last-Event-ID"}
    assert {"400", "401", "403", "404", "405"} <= set(stream["responses"])


def test_the_docs_page_loads_nothing_from_the_internet(client):
    page = client.get("/api/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/static/") for a in assets), assets
    assert "cdn" not in html.lower()
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
        b"".join(served.streaming_content) if served.streaming else served.content


@pytest.mark.parametrize(
    "raw, words",
    [
        ('{"text": "milk\\u0000", "requester": "ada"}', "text must not contain NUL characters"),
        ('{"text": "milk", "requester": "a\\ud800"}', "requester must be valid Unicode"),
        ('{"te\\u0000xt": "milk", "requester": "ada"}', "a field name must not contain NUL"),
    ],
)
def test_nul_and_lone_surrogate_messages_reach_the_client(client, raw, words):
    response = client.post("/api/lists", data=raw, content_type="application/json")
    assert response.status_code == 400
    assert words in response.json()["message"]


def test_a_json_body_that_is_not_an_object_says_so(client):
    response = client.post("/api/nests", data=json.dumps([1, 2]), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["message"] == "the body must be a JSON object"
