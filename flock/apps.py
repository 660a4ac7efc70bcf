from django.apps import AppConfig


class FlockConfig(AppConfig):
    name = "flock"
    verbose_name = "The flock"

    def ready(self) -> None:
        # Late: the checks and hooks import models, which need the app registry ready.
        from flock.wiring import wire

        wire()
