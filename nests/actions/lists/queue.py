"""The list pipeline's three tasks, handed in at start-up.

The tasks (nests.tasks) run the pipeline (a sortie's flight, a list's finish, a banter
line), and the pipeline queues them and asks the worker which of their runs are live:
were the pipeline to import the tasks, the code would import itself in a circle.
NestsConfig.ready() hands the tasks to `wire` instead, once, at start-up (as the chat
core's nests.actions.chat.queue does).
"""

from __future__ import annotations

from typing import Any


class _Tasks:
    fly_sortie: Any = None
    finish_list: Any = None
    speak_banter: Any = None


def wire(*, fly_sortie: Any, finish_list: Any, speak_banter: Any) -> None:
    _Tasks.fly_sortie, _Tasks.finish_list, _Tasks.speak_banter = fly_sortie, finish_list, speak_banter


def _wired(task: Any) -> Any:
    if task is None:
        raise RuntimeError("the list pipeline's tasks are not wired (NestsConfig.ready wires them)")
    return task


def fly_sortie_task() -> Any:
    """nests.tasks.fly_sortie_task: flies one sortie."""
    return _wired(_Tasks.fly_sortie)


def finish_list_task() -> Any:
    """nests.tasks.finish_list_task: ends a list once its items have."""
    return _wired(_Tasks.finish_list)


def speak_banter_task() -> Any:
    """nests.tasks.speak_banter_task: one banter line."""
    return _wired(_Tasks.speak_banter)
