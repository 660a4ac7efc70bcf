"""Background work survives a restart: a task scheduled for later still fires."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.live


def test_a_task_scheduled_for_later_fires_after_the_server_restarted(live_server_factory, tmp_path):
    server = live_server_factory().start()
    mark = tmp_path / "mark"
    result = server.manage(
        "shell", "-c",
        "from datetime import timedelta; from django.utils import timezone; "
        "from tests.support.tasks import leave_mark; "
        f"leave_mark.using(run_after=timezone.now() + timedelta(seconds=3)).enqueue({str(mark)!r})",
    )
    assert result.returncode == 0, result.stderr
    server.stop(hard=True)
    assert not mark.exists()
    server.start()
    deadline = time.monotonic() + 20
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), server.log()[-2000:]


def test_a_task_running_when_the_server_died_runs_again_after_restart(live_server_factory, tmp_path):
    server = live_server_factory().start()
    server.stop(hard=True)
    mark = tmp_path / "mark"
    # A task the dead process had claimed: RUNNING, never finished.
    result = server.manage(
        "shell", "-c",
        "from tests.support.tasks import leave_mark; "
        "from django_tasks_db.models import DBTaskResult; "
        f"r = leave_mark.enqueue({str(mark)!r}); "
        "DBTaskResult.objects.filter(id=r.id).update(status='RUNNING')",
    )
    assert result.returncode == 0, result.stderr
    server.start()
    deadline = time.monotonic() + 20
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), server.log()[-2000:]
