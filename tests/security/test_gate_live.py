"""The owner gate on a real daphne: the SSE consumer is an ASGI path of its own, so the
Host, Origin and token checks are tested on it over a socket."""

from __future__ import annotations

import httpx
import pytest

from tests.support.sse import SSEClient

pytestmark = pytest.mark.live

TOKEN = "live-owner-token-0123456789"


@pytest.fixture
def server(live_server_factory):
    return live_server_factory().start()


def test_host_evil_example_on_the_stream_gets_400(server):
    response = httpx.get(f"{server.url}/api/events?since=0", headers={"Host": "evil.example"}, timeout=10)
    assert response.status_code == 400
    assert "ALLOWED_HOSTS" in response.json()["message"]
    page = httpx.get(f"{server.url}/", headers={"Host": "evil.example"}, timeout=10)
    assert page.status_code == 400


def test_a_foreign_origin_on_the_stream_gets_403_and_no_cors_grant(server):
    response = httpx.get(
        f"{server.url}/api/events?since=0", headers={"Origin": "http://evil.example"}, timeout=10
    )
    assert response.status_code == 403
    assert "access-control-allow-origin" not in response.headers


def test_a_text_plain_post_gets_415_and_creates_nothing(server):
    before = server.get("/api/state").json()["last_event_id"]
    response = httpx.post(
        f"{server.url}/api/lists",
        content=b'{"text": "buy milk", "requester": "mallory"}',
        headers={"Content-Type": "text/plain"},
        timeout=10,
    )
    assert response.status_code == 415
    assert response.json()["message"]
    assert server.get("/api/state").json()["last_event_id"] == before


def test_the_page_own_requests_still_work(server):
    origin = server.url
    response = server.post(
        "/api/nests", {"name": "Own Origin", "crows": ["Rook"]},
        headers={"Origin": origin, "Sec-Fetch-Site": "same-origin"},
    )
    assert response.status_code == 201, response.text


def test_with_a_token_no_token_is_401_bearer_is_200_and_the_stream_works(live_server_factory):
    server = live_server_factory(env={"CROWS_OWNER_TOKEN": TOKEN}).start()
    bare = server.get("/api/state")
    assert bare.status_code == 401 and bare.json()["message"]
    assert server.get("/api/events?since=0").status_code == 401
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert server.get("/api/state", headers=auth).status_code == 200
    posted = server.post("/api/nests", {"name": "Token Nest", "crows": ["Rook"]}, headers=auth)
    assert posted.status_code == 201
    client = SSEClient(f"{server.url}/api/events?since=0", headers=auth)
    try:
        assert client.status == 200
        frames = client.drain(quiet=1.0)
        assert frames and frames[-1].id is not None
    finally:
        client.close()
    page = httpx.get(f"{server.url}/nests/todo", timeout=10)
    assert page.status_code == 302 and page.headers["location"].startswith("/login")


def test_a_websocket_upgrade_is_refused_with_403_not_a_500(server):
    import socket

    host, port = server.url.removeprefix("http://").split(":")
    for path, hostname in (("/api/events", f"{host}:{port}"), ("/", "evil.example")):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: {hostname}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
            )
            status_line = sock.recv(4096).split(b"\r\n", 1)[0]
        assert status_line.split()[1] == b"403", status_line
    assert server.get("/api/state").status_code == 200


def test_a_nul_in_the_streams_nest_id_is_a_400(server):
    response = httpx.get(f"{server.url}/api/events?nest_id=%00", timeout=10)
    assert response.status_code == 400
    assert response.json()["message"] == "nest_id must not contain NUL characters"
