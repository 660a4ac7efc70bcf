from django.apps import AppConfig


def _list_has_events(list_id: str) -> bool:
    from flock.models import Event, PrunedStream

    # A list's stream exists once the list does: list.started is written with the list.
    # A list pruned by retention keeps its stream, which answers with stream.reset.
    return (
        Event.objects.filter(list_key=list_id).exists()
        or PrunedStream.objects.filter(key=f"list:{list_id}").exists()
    )


class FlockConfig(AppConfig):
    name = "flock"
    verbose_name = "The flock"

    def ready(self) -> None:
        from flock import worker
        from flock.stream.consumer import register_stream_key

        worker.connect_signals()
        register_stream_key("list_id", _list_has_events)
