"""Run inside a private network namespace (tests/security/test_network_exposure.py makes
it): brings lo up with a second address, starts daphne on 0.0.0.0 and asks it over both
addresses. Prints one JSON object. Nothing here can reach the host's own interfaces: the
namespace has no other interface."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx

SECOND = "198.18.0.1"


def main() -> None:
    daphne, port, env_json = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["ip", "addr", "add", f"{SECOND}/32", "dev", "lo"], check=True)
    env = json.loads(env_json)
    token = env.get("CROWS_OWNER_TOKEN", "")
    proc = subprocess.Popen(
        [daphne, "-b", "0.0.0.0", "-p", port, "crows_site.asgi:application"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    results: dict[str, object] = {}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/state", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("daphne did not start in the namespace") from None
                time.sleep(0.2)
        auth = {"Authorization": f"Bearer {token}"} if token else {}
        for name, address in (("loopback", "127.0.0.1"), ("second", SECOND)):
            state = httpx.get(f"http://{address}:{port}/api/state", headers=auth, timeout=10)
            page = httpx.get(f"http://{address}:{port}/", headers=auth, timeout=10)
            results[name] = {
                "state_status": state.status_code,
                "state_body": state.text[:500],
                "page_status": page.status_code,
            }
        if token:
            bare = httpx.get(f"http://{SECOND}:{port}/api/state", timeout=10)
            results["second_without_token"] = {"status": bare.status_code, "body": bare.text[:500]}
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
