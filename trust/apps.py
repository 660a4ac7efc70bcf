from django.apps import AppConfig


class TrustConfig(AppConfig):
    name = "trust"
    verbose_name = "Trust"

    def ready(self) -> None:
        # Late: the hooks' modules import models, which need the app registry ready.
        from trust.wiring import wire

        wire()
