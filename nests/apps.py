from django.apps import AppConfig


class NestsConfig(AppConfig):
    name = "nests"
    verbose_name = "Nests"

    def ready(self) -> None:
        # Late: the hooks' modules import models, which need the app registry ready.
        from nests.wiring import wire

        wire(self)
