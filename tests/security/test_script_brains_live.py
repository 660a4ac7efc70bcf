"""Scripted brains from the API, black box on a real daphne (docs/SECURITY.md "Scripted
brains"): every spec that leaves CROWS_SCRIPT_DIR or names something that is not a small
regular file gets a prompt 400 with one sentence, and the server's memory does not grow."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.live

MiB = 1024 * 1024


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def settled_rss_bytes(pid: int, *, within: int = 4 * MiB, timeout: float = 60) -> int:
    """The server's memory once its start-up work (Jev's models load in the background
    for a few seconds) is done: two samples a second and a half apart within `within`."""
    deadline = time.monotonic() + timeout
    last = rss_bytes(pid)
    while time.monotonic() < deadline:
        time.sleep(1.5)
        now = rss_bytes(pid)
        if abs(now - last) < within:
            return now
        last = now
    return last


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    directory = tmp_path / "scripts"
    directory.mkdir()
    (directory / "rook.json").write_text(json.dumps([{"crow": "*", "reply": "from the script dir"}]))
    os.mkfifo(directory / "fifo.json")
    (directory / "big.json").write_bytes(b"[" + b" " * (2 * MiB) + b"]")
    (tmp_path / "outside.json").write_text(json.dumps([{"crow": "*", "reply": "from outside"}]))
    return directory


def test_script_specs_outside_the_rules_get_one_prompt_400_and_no_memory(live_server_factory, scripts, tmp_path):
    server = live_server_factory(env={"CROWS_SCRIPT_DIR": str(scripts)}).start()
    assert server.proc is not None
    specs = ["script:/dev/zero", "script:/etc/shadow", "script:fifo.json", "script:big.json",
             f"script:{tmp_path / 'outside.json'}", "script:../outside.json", "script:nothing-here.json"]
    server.post("/api/brains/test", {"model": "mock"})  # the server's steady state, warmed up
    before = settled_rss_bytes(server.proc.pid)
    messages = set()
    for spec in specs:
        for _ in range(3):
            tested = server.post("/api/brains/test", {"model": spec}, timeout=10)
            assert tested.status_code == 400, (spec, tested.text)
            messages.add(tested.json()["message"])
        patched = httpx.patch(f"{server.url}/api/crows/Rook", json={"model": spec}, timeout=10)
        assert patched.status_code == 400, (spec, patched.text)
        messages.add(patched.json()["message"])
    assert len(messages) == 1, messages
    assert "CROWS_SCRIPT_DIR" in messages.pop()
    assert rss_bytes(server.proc.pid) - before < 50 * MiB

    # The rule lets the operator's own files through.
    ok = server.post("/api/brains/test", {"model": "script:rook.json"}, timeout=10)
    assert ok.status_code == 200 and ok.json()["ok"], ok.text


def test_without_a_script_dir_the_api_takes_no_script_brain(live_server_factory, scripts):
    server = live_server_factory().start()
    tested = server.post("/api/brains/test", {"model": f"script:{scripts / 'rook.json'}"}, timeout=10)
    assert tested.status_code == 400 and "CROWS_SCRIPT_DIR is not set" in tested.json()["message"]
