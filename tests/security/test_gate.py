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


@override_settings(CROWS_OWNER_TOKEN="s3cret-token")
def test_with_a_token_pages_redirect_to_login_and_the_login_cookie_opens_everything():
    browser = Client(enforce_csrf_checks=True)
    page = browser.get("/trust")
    assert page.status_code == 302 and page["Location"] == "/login?next=/trust"
    form = browser.get("/login?next=/trust")
    assert form.status_code == 200 and b'name="csrfmiddlewaretoken"' in form.content
    csrf = form.context["csrf_token"]

    # Without the CSRF token the form post is refused by Django's CSRF protection.
    assert browser.post("/login", {"token": "s3cret-token", "next": "/trust"}).status_code == 403
    wrong = browser.post("/login", {"token": "nope", "next": "/trust", "csrfmiddlewaretoken": csrf})
    assert wrong.status_code == 401 and COOKIE_NAME not in wrong.cookies

    ok = browser.post("/login", {"token": "s3cret-token", "next": "/trust", "csrfmiddlewaretoken": str(csrf)})
    assert ok.status_code == 302 and ok["Location"] == "/trust"
    cookie = ok.cookies[COOKIE_NAME]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert "s3cret-token" not in cookie.value
    assert browser.get("/trust").status_code == 200
    assert browser.get("/api/state").status_code == 200
    assert browser.get("/api/docs").status_code == 200


@override_settings(CROWS_OWNER_TOKEN="s3cret-token")
def test_with_a_token_the_api_docs_page_redirects_to_login(client):
    page = client.get("/api/docs")
    assert page.status_code == 302 and page["Location"] == "/login?next=/api/docs"
    assert client.get("/api/openapi.json").status_code == 401


@override_settings(CROWS_OWNER_TOKEN="s3cret-token")
def test_login_never_redirects_off_site(client):
    form = client.get("/login?next=https://evil.example/")
    assert form.context["next"] == "/"
    ok = client.post("/login", {"token": "s3cret-token", "next": "//evil.example/x"})
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
    with override_settings(CROWS_OWNER_TOKEN="proxy-token"):
        ok = client.get("/api/state", HTTP_AUTHORIZATION="Bearer proxy-token", **{header: "203.0.113.7"})
        assert ok.status_code == 200


def test_an_origin_without_the_default_port_is_the_servers_own(client):
    response = client.post(
        "/api/nests", data=NEST, content_type="application/json",
        HTTP_HOST="localhost:80", HTTP_ORIGIN="http://localhost",
    )
    assert response.status_code == 201, response.content
