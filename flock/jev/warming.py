"""Warming Jev up: every question's model and the fit-score vocabulary, loaded (or
trained) before the first message needs them. Above both the service (service.py) and the
fit score (fit.py), which reads the service's questions and cache directory."""

from __future__ import annotations

import logging
import threading

from flock.jev import fit
from flock.jev.service import default_jev

log = logging.getLogger("crows.jev")


def warm() -> dict[str, str]:
    """Pre-load every built-in question (and the fit-score vocabulary) in this process."""
    versions = default_jev().warm()
    fit.warm_fit_score()
    return versions


def warm_in_background() -> threading.Thread:
    """Start `warm` on a daemon thread: a process that serves posts or flies crows loads
    (or trains, once per data version) Jev's models and fits the fit-score vocabulary off
    the request and task paths, so its first message is tagged as fast as the rest (the
    fit alone takes seconds)."""

    def run() -> None:
        try:
            warm()
        except Exception:
            log.exception("warming Jev failed; it will load on first use")

    thread = threading.Thread(target=run, name="crows-jev-warm", daemon=True)
    thread.start()
    return thread
