"""What an idle stream holds: no start-up state carried in its task's context.

Every connection's task starts from a copy of the context daphne's thread runs in. An asgiref
``Local`` that start-up work set there (building the API document sets Django's URL prefix,
urlconf and active translation: 23 of them) rides along in every stream, and each of the
stream's ``sync_to_async`` calls copies every one of them back into its task, 7 KiB per
idle stream for as long as it stays open (docs/PERFORMANCE.md, "Stream"). Counted, not
timed: the variables in the contexts, in a process that loads the server as daphne does.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.server import ROOT, base_env

PROBE = """
import asyncio, contextvars, json
import crows_site.asgi
from asgiref.sync import sync_to_async

def locals_in(context):
    # A Local keeps its values in a context variable of this name (asgiref/local.py).
    return sorted(var.name for var in context if var.name == "asgiref.local")

async def a_stream():
    # What the stream does before it idles: a database read off the loop's thread.
    await sync_to_async(lambda: None, thread_sensitive=False)()
    return locals_in(contextvars.copy_context())

async def main():
    # Tasks are made from the running thread's context, as daphne makes a connection's.
    return await asyncio.ensure_future(a_stream())

print(json.dumps({"server": locals_in(contextvars.copy_context()), "stream": asyncio.run(main())}))
"""


def test_a_stream_task_carries_no_local_from_the_servers_start_up(sqlite_template, tmp_path):
    env = base_env(CROWS_DATA_DIR=str(sqlite_template.fresh_dir(tmp_path.name)), CROWS_EMBEDDED_WORKER="0")
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found == {"server": [], "stream": []}, found
