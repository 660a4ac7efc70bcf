"""The flock app's start-up checks and hooks, in one place: FlockConfig.ready() imports this
module (the one import that must wait for Django's app registry) and calls `wire`."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from flock import worker
from flock.actions import record_flight
from flock.admin import check_every_panel
from flock.brains import BrainSpecError, check_brain_spec, missing_key
from flock.events import Published, wire_doorbell
from flock.jev import llm as jev_llm
from flock.models import Event, PrunedStream
from flock.stream import hub
from flock.stream.consumer import register_stream_key


def _list_has_events(list_id: str) -> bool:
    # A list's stream exists once the list does: list.started is written with the list.
    # A list pruned by retention keeps its stream, which answers with stream.reset.
    return (
        Event.objects.filter(list_key=list_id).exists()
        or PrunedStream.objects.filter(key=f"list:{list_id}").exists()
    )


def _check_default_brain() -> None:
    # A brain that cannot think (an unknown provider, a missing model, a script file that
    # is missing or malformed) stops start-up, naming it, rather than turning every crow's
    # reply into an error later (docs/BRAINS.md).
    try:
        check_brain_spec(settings.CROWS_BRAIN)
    except BrainSpecError as exc:
        raise ImproperlyConfigured(f"CROWS_BRAIN: {exc}") from None
    where = missing_key(settings.CROWS_BRAIN)
    if where:
        # Said once, where the owner looks (flock.brains.missing_key says why not fatal).
        logging.getLogger("crows.brains").warning(
            "CROWS_BRAIN=%s but no API key is set (%s): every call of the default brain will fail",
            settings.CROWS_BRAIN, where,
        )


def _ring_hub(published: Published) -> None:
    # Looked up when it rings, so a test can listen in place of the hub.
    hub.publish(published)


def wire() -> None:
    # django.contrib.admin comes first in INSTALLED_APPS: every admin module is loaded.
    check_every_panel()
    # The event log rings the stream hub's doorbell on commit; the hub reads the log, so
    # the log never imports it.
    wire_doorbell(_ring_hub)
    # Jev's LLM second opinion logs its brain call as a flight (flock.jev loads without
    # the app registry, so it is handed the flight log here).
    jev_llm.wire_flight_log(record_flight)
    worker.connect_signals()
    _check_default_brain()
    register_stream_key("list_id", _list_has_events)
