"""A task the worker tests schedule; it leaves a file behind so a test can see it ran."""

from pathlib import Path

from django.tasks import task


@task()
def leave_mark(path: str) -> None:
    Path(path).write_text("ran")
