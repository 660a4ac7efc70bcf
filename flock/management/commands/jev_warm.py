"""``manage.py jev_warm``: train (or load) Jev's models into its cache now, before a server
starts, so the owner's first message is not held up by a training run.

A server warms Jev on a thread at start-up, but on a fresh install or after an update of
Jev's data that thread trains for about 20 s (docs/JEV.md, "Training time"), and a message
posted meanwhile waits for it. `scripts/run.sh` runs this command first; a second run, with
the cache in place, takes about a second."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandError

from flock.jev import JevError
from flock.jev.fit import vocabulary_cache_path, warm_fit_score
from flock.jev.service import default_jev
from flock.management.cli import CrowsCommand


class Command(CrowsCommand):
    help = (
        "Train Jev's models into its cache (CROWS_JEV_CACHE_DIR) where they are missing or out of date, "
        "so a server starting next answers its first message at once; cached models are only checked."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        jev = default_jev()
        trained = 0
        try:
            for name in jev.warm_order():
                if jev.is_cached(name):
                    verb = "loaded from the cache"
                else:
                    # Said before the work starts: training is the one long step.
                    self.stdout.write(f"jev: training {name} (once per install or update of Jev's data) ...")
                    self.stdout.flush()
                    verb = "trained"
                    trained += 1
                started = time.perf_counter()
                loaded = jev.loaded(name)
                self.stdout.write(f"jev: {name} {verb} in {time.perf_counter() - started:.1f} s ({loaded.model.version})")
            # The crow-fit vocabulary: fitted from every question's texts, cached beside them.
            if not vocabulary_cache_path().exists():
                self.stdout.write("jev: fitting the crow-fit vocabulary ...")
                self.stdout.flush()
                trained += 1
            started = time.perf_counter()
            verb = "loaded from the cache" if warm_fit_score() else "fitted"
            self.stdout.write(f"jev: crow-fit vocabulary {verb} in {time.perf_counter() - started:.1f} s")
        except (JevError, OSError) as exc:
            raise CommandError(f"jev: could not get Jev ready: {exc}") from exc
        for name, problem in jev.broken().items():
            # The server serves the other questions without it, so this is not fatal here either.
            self.stderr.write(f"jev: question {name} was not trained: {problem.message}")
        where = jev.cache_dir
        self.stdout.write(
            f"jev: ready; {trained} model(s) trained into {where}" if trained else f"jev: ready; every model was cached in {where}"
        )
