"""The owner gate (docs/SECURITY.md) through Django's test client: content type, origin,
host, token and login, one rule at a time."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from crows_site.security import COOKIE_NAME

pytestmark = pytest.mark.django_db

NEST = {"name": "Gate Test", "crows": ["Rook"]}


def message(response) -> str:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    assert isinstance(body["message"], str) and body["message"]
    return body["message"]


def test_a_text_plain_post_is_refused_with_415(client):
    response = client.post("/api/nests", data='{"name": "x", "crows": ["Rook"]}', content_type="text/plain")
    assert response.status_code == 415
    assert "application/json" in message(response)


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]
)
def test_every_form_encoding_and_a_missing_content_type_get_415(client, content_type):
    response = client.generic("POST", "/api/lists", b"text=a&requester=b", content_type=content_type)
    assert response.status_code == 415
    message(response)


def test_json_with_a_charset_is_accepted(client):
    response = client.post("/api/nests", data=NEST, content_type="application/json; charset=utf-8")
    assert response.status_code == 201, response.content


def test_a_foreign_origin_gets_403_on_writes_and_reads_and_no_cors_grant(client):
    response = client.post("/api/nests", data=NEST, content_type="application/json", HTTP_ORIGIN="http://evil.example")
    assert response.status_code == 403
    assert "CROWS_ALLOWED_ORIGINS" in message(response)
    read = client.get("/api/state", HTTP_ORIGIN="http://evil.example")
    assert read.status_code == 403
    assert not read.has_header("Access-Control-Allow-Origin")
    assert client.get("/api/state").get("Access-Control-Allow-Origin") is None


def test_an_origin_on_another_port_of_the_same_host_is_foreign(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json", HTTP_ORIGIN="http://testserver:9999"
    )
    assert response.status_code == 403


def test_a_null_origin_is_foreign(client):
    response = client.post("/api/nests", data=NEST, content_type="application/json", HTTP_ORIGIN="null")
    assert response.status_code == 403


def test_sec_fetch_site_cross_site_without_origin_gets_403(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json", HTTP_SEC_FETCH_SITE="cross-site"
    )
    assert response.status_code == 403
    message(response)


def test_the_servers_own_origin_is_allowed(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json",
        HTTP_ORIGIN="http://testserver", HTTP_SEC_FETCH_SITE="same-origin",
    )
    assert response.status_code == 201, response.content


@override_settings(CROWS_ALLOWED_ORIGINS=["https://crows.example:8443"])
def test_an_origin_listed_in_crows_allowed_origins_is_allowed(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json",
        HTTP_ORIGIN="https://crows.example:8443", HTTP_SEC_FETCH_SITE="cross-site",
    )
    assert response.status_code == 201, response.content


def test_a_host_outside_allowed_hosts_gets_400_json(client):
    response = client.get("/api/state", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert "ALLOWED_HOSTS" in message(response)
    assert client.get("/", HTTP_HOST="evil.example").status_code == 400


def test_pages_are_not_refused_for_a_cross_site_link(client):
    assert client.get("/", HTTP_SEC_FETCH_SITE="cross-site").status_code == 200


@override_settings(CROWS_OWNER_TOKEN="correct horse battery staple")
def test_with_a_token_the_api_needs_it(client):
    response = client.get("/api/state")
    assert response.status_code == 401
    assert "CROWS_OWNER_TOKEN" in message(response)
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/api/state", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/api/state", HTTP_AUTHORIZATION="Bearer correct horse battery staple").status_code == 200
    posted = client.post(
        "/api/nests", data=NEST, content_type="application/json",
        HTTP_AUTHORIZATION="Bearer correct horse battery staple",
    )
    assert posted.status_code == 201


@override_settings(CROWS_OWNER_TOKEN="s3cret-token-for-the-gate-tests")
def test_with_a_token_pages_redirect_to_login_and_the_login_cookie_opens_everything():
    browser = Client(enforce_csrf_checks=True)
    page = browser.get("/trust")
    assert page.status_code == 302 and page["Location"] == "/login?next=/trust"
    form = browser.get("/login?next=/trust")
    assert form.status_code == 200 and b'name="csrfmiddlewaretoken"' in form.content
    csrf = form.context["csrf_token"]

    # Without the CSRF token the form post is refused by Django's CSRF protection.
    assert browser.post("/login", {"token": "s3cret-token-for-the-gate-tests", "next": "/trust"}).status_code == 403
    wrong = browser.post("/login", {"token": "nope", "next": "/trust", "csrfmiddlewaretoken": csrf})
    assert wrong.status_code == 401 and COOKIE_NAME not in wrong.cookies

    ok = browser.post("/login", {"token": "s3cret-token-for-the-gate-tests", "next": "/trust", "csrfmiddlewaretoken": str(csrf)})
    assert ok.status_code == 302 and ok["Location"] == "/trust"
    cookie = ok.cookies[COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert "s3cret-token-for-the-gate-tests" not in cookie.value
    assert browser.get("/trust").status_code == 200
    assert browser.get("/api/state").status_code == 200
    assert browser.get("/api/docs").status_code == 200


@override_settings(CROWS_OWNER_TOKEN="s3cret-token-for-the-gate-tests")
def test_with_a_token_the_api_docs_page_redirects_to_login(client):
    page = client.get("/api/docs")
    assert page.status_code == 302 and page["Location"] == "/login?next=/api/docs"
    assert client.get("/api/openapi.json").status_code == 401


@override_settings(CROWS_OWNER_TOKEN="s3cret-token-for-the-gate-tests")
def test_login_never_redirects_off_site(client):
    form = client.get("/login?next=https://evil.example/")
    assert form.context["next"] == "/"
    ok = client.post("/login", {"token": "s3cret-token-for-the-gate-tests", "next": "//evil.example/x"})
    assert ok["Location"] == "/"


def test_without_a_token_login_says_none_is_needed(client):
    response = client.get("/login")
    assert response.status_code == 200
    assert b"no owner token" in response.content


@pytest.mark.parametrize("header", ["HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"])
def test_a_request_through_a_reverse_proxy_needs_a_token(client, header):
    response = client.get("/api/state", **{header: "203.0.113.7"})
    assert response.status_code == 403
    assert "CROWS_OWNER_TOKEN" in message(response)
    with override_settings(CROWS_OWNER_TOKEN="proxy-token-0123456789abcdef"):
        ok = client.get("/api/state", HTTP_AUTHORIZATION="Bearer proxy-token-0123456789abcdef", **{header: "203.0.113.7"})
        assert ok.status_code == 200


def test_an_origin_without_the_default_port_is_the_servers_own(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json",
        HTTP_HOST="localhost:80", HTTP_ORIGIN="http://localhost",
    )
    assert response.status_code == 201, response.content


def test_a_method_the_path_does_not_take_is_405_and_an_unknown_path_404_whatever_the_content_type(client):
    # The 415 guards the API's state changes; anything else is the router's to answer.
    wrong_method = client.generic("DELETE", "/api/state")
    assert wrong_method.status_code == 405 and "GET" in message(wrong_method)
    assert client.generic("QUERY", "/api/state").status_code == 405
    unknown = client.generic("POST", "/api/nope")
    assert unknown.status_code == 404 and "/api/nope" in message(unknown)
    # A state change the API takes still needs JSON, path parameters included.
    assert client.generic("PATCH", "/api/crows/Rook", b"epithet=x", content_type="text/plain").status_code == 415
    assert client.generic("POST", "/api/items/x-1/retry").status_code == 415


@override_settings(CROWS_OWNER_TOKEN="tökén-123-and-more-characters")
def test_a_token_beyond_ascii_works_as_a_bearer_header_sent_in_utf8(client):
    # A header reaches the gate decoded as Latin-1: its bytes are what the client sent.
    sent = "Bearer tökén-123-and-more-characters".encode().decode("latin-1")
    assert client.get("/api/state", HTTP_AUTHORIZATION=sent).status_code == 200
    latin1 = "Bearer tökén-123-and-more-characters"
    assert client.get("/api/state", HTTP_AUTHORIZATION=latin1).status_code == 401


@override_settings(CROWS_OWNER_TOKEN="s3cret-token-for-the-gate-tests")
def test_the_login_page_keeps_the_query_of_the_page_asked_for(client):
    page = client.get("/nests/todo?focus=1&x=2")
    assert page.status_code == 302
    form = client.get(page["Location"])
    assert form.context["next"] == "/nests/todo?focus=1&x=2"


@override_settings(CROWS_OWNER_TOKEN="s3cret-token-for-the-gate-tests")
@pytest.mark.parametrize(
    ("header", "value", "secure"),
    [("HTTP_X_FORWARDED_PROTO", "https", True), ("HTTP_FORWARDED", "for=203.0.113.7;proto=https", True),
     ("HTTP_X_FORWARDED_PROTO", "http", False)],
)
def test_the_login_cookie_is_secure_behind_a_tls_proxy(client, header, value, secure):
    ok = client.post("/login", {"token": "s3cret-token-for-the-gate-tests", "next": "/"}, **{header: value})
    assert ok.status_code == 302
    assert bool(ok.cookies[COOKIE_NAME]["secure"]) is secure


@pytest.mark.parametrize(
    "url", ["/api/flights?crow=%00", "/api/flights?item_id=a%00b", "/api/review?nest_id=%00",
            "/api/crows/Rook/memory?q=%00", "/api/orchestration?crow=x&decider=%00"],
)
def test_a_nul_in_a_query_parameter_is_a_400_naming_it(client, url):
    # PostgreSQL cannot compare a string holding NUL (a 500 there, before this check).
    response = client.get(url)
    assert response.status_code == 400
    assert "must not contain NUL characters" in message(response)
    assert "query parameter" in message(response)


def test_a_nul_in_a_query_parameter_no_endpoint_reads_is_ignored_like_any_junk(client):
    assert client.get("/api/state?x=1&y=%00").status_code == 200
    assert client.get("/api/flights?%00=1").status_code == 200
