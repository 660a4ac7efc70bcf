"""ASGI entry point: Django for everything, except GET /api/events, which the SSE
consumer serves. `daphne crows_site.asgi:application` alone is a complete flock: it
also starts the embedded background worker unless CROWS_EMBEDDED_WORKER=0."""

from __future__ import annotations

import contextvars
import os

from crows_site.daphne_requests import name_every_status, stop_form_parsing
from crows_site.env import migrated_or_exit, settings_or_exit
from crows_site.handlers import get_asgi_application
from crows_site.twisted_writes import send_queued_writes_at_once

# daphne hands the raw body over; Twisted's own parse of form bodies is waste, and it
# refuses some before the API can answer (crows_site/daphne_requests.py).
stop_form_parsing()
# A 429's status line says "Too Many Requests", not Twisted's "Unknown Status".
name_every_status()
# A response's bytes, an SSE frame's above all, go out when written instead of on the
# loop's next turn behind two epoll_ctl calls (crows_site/twisted_writes.py).
send_queued_writes_at_once()

# Start-up work runs in a copy of this thread's context, never in the context itself:
# every connection's task starts from a copy of the context the server runs in, so an
# asgiref Local that start-up work sets here (Django's URL prefix and urlconf, the active
# translation, ...: building the API document sets 23) would ride along in every request,
# and each of a stream's sync_to_async calls copies them all back into its task: 7 KiB per
# idle stream, for as long as it stays open (docs/PERFORMANCE.md, "Stream").
start_up = contextvars.copy_context()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crows_site.settings")
start_up.run(settings_or_exit, "so-many-crows")

# Django must be set up before the consumer (and through it the models) is imported.
django_asgi_app = start_up.run(get_asgi_application)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from crows_site.api_document import api_takes, documented_query_names  # noqa: E402
from crows_site.security import OwnerGate, refuse_websocket  # noqa: E402
from flock.stream.consumer import EventStreamConsumer  # noqa: E402

# OwnerGate sees every request first, the stream included: Host, Origin, token and
# Content-Type checks (docs/SECURITY.md). No WebSockets: an upgrade is refused with 403.
application = ProtocolTypeRouter(
    {
        "http": OwnerGate(
            URLRouter(
                [
                    path("api/events", EventStreamConsumer.as_asgi()),
                    # channels routes to any ASGI app; the stubs know only Django views.
                    re_path(r"", django_asgi_app),  # type: ignore[arg-type]
                ]
            )
        ),
        "websocket": refuse_websocket,
    }
)

# The gate's map of the API's operations and query parameters is built from its OpenAPI
# document (~0.1 s): now, not in the first request.
start_up.run(api_takes, "POST", "/api/")
start_up.run(documented_query_names)

from flock.jev import warm_in_background  # noqa: E402
from flock.stream.quiet_outage import say_if_redis_is_away  # noqa: E402

# Jev's models and fit vocabulary load off the request path (db_worker does the same).
warm_in_background()
# A wrong REDIS_URL is said now, in one line, not at the first stream (db_worker too).
start_up.run(say_if_redis_is_away, "so-many-crows")

if settings.CROWS_EMBEDDED_WORKER and os.environ.get("CROWS_NO_WORKER_ON_IMPORT") != "1":
    from flock import worker  # noqa: E402

    # The worker reads the task table at once: an unmigrated database is said in one line.
    # (Only here: a server without the worker need not wait for a database still starting
    # up, and scale-out's db_workers make the same check.)
    start_up.run(migrated_or_exit, "so-many-crows")
    start_up.run(worker.start_embedded)

import gc  # noqa: E402

# Everything imported so far lives as long as the process: keep it out of every collection,
# and collect the young generation less often. Measured (docs/PERFORMANCE.md): a fan-out to
# 1,000 streams allocates ~30 objects per stream, and collections were 18% of the loop's time.
gc.collect()
gc.freeze()
gc.set_threshold(50_000, 20, 100)
