"""While Redis is down, channels_redis's receive task logs a traceback every second it
retries; the logs get one line a minute instead (flock/stream/quiet_outage.py)."""

from __future__ import annotations

import logging

import pytest

from flock.stream import quiet_outage


def _retry_failed(logger: logging.Logger) -> None:
    try:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6391. Connection refused.")
    except ConnectionError:
        logger.exception("Unexpected exception in receive task")


def test_a_redis_outage_is_one_line_a_minute_without_the_traceback(caplog, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(quiet_outage.time, "monotonic", lambda: clock[0])
    logger = logging.getLogger("channels_redis.pubsub")
    # The settings put the filter on this logger; it is what runs here.
    assert any(isinstance(f, quiet_outage.RedisOutageLogs) for f in logger.filters)
    with caplog.at_level(logging.ERROR, logger="channels_redis.pubsub"):
        for _ in range(30):  # thirty retries in the same minute
            _retry_failed(logger)
            clock[0] += 1
        clock[0] += quiet_outage.EVERY_S
        _retry_failed(logger)
    records = [r for r in caplog.records if r.name == "channels_redis.pubsub"]
    assert len(records) == 2
    for record in records:
        assert record.exc_info is None
        assert record.getMessage().startswith(
            "Unexpected exception in receive task: ConnectionError: Error 111 connecting to 127.0.0.1:6391"
        )


@pytest.mark.parametrize("message", ["a plain warning", "another"])
def test_records_without_an_exception_pass_unchanged(message):
    record = logging.LogRecord("channels_redis.pubsub", logging.WARNING, __file__, 1, message, None, None)
    assert quiet_outage.RedisOutageLogs().filter(record) and record.getMessage() == message


def test_a_process_publishing_while_redis_is_down_says_so_once_a_minute(caplog, monkeypatch):
    # A db_worker flying lists publishes dozens of events a minute; each failed publish
    # used to be a line of its own.
    import concurrent.futures

    from flock.stream import hub

    clock = [5000.0]
    monkeypatch.setattr(quiet_outage.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(quiet_outage, "PUBLISH_FAILURES", quiet_outage.OncePerMinute())
    monkeypatch.setattr(hub, "PUBLISH_FAILURES", quiet_outage.PUBLISH_FAILURES)

    def failed_send() -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_exception(ConnectionError("Error 111 connecting to 127.0.0.1:6391. Connection refused."))
        return future

    with caplog.at_level(logging.WARNING, logger="crows.stream"):
        for _ in range(40):
            hub._log_send_failure(failed_send())
            clock[0] += 0.5
        clock[0] += quiet_outage.EVERY_S
        hub._log_send_failure(failed_send())
    said = [r.getMessage() for r in caplog.records if "Redis publish failed" in r.getMessage()]
    assert len(said) == 2 and all("said once a minute" in line for line in said)


def test_a_publish_failure_that_is_not_an_outage_is_said_every_time(caplog):
    import concurrent.futures

    from flock.stream import hub

    with caplog.at_level(logging.WARNING, logger="crows.stream"):
        for _ in range(3):
            future: concurrent.futures.Future = concurrent.futures.Future()
            future.set_exception(TypeError("Object of type set is not msgpack serializable"))
            hub._log_send_failure(future)
    said = [r for r in caplog.records if "Redis publish failed" in r.getMessage()]
    assert len(said) == 3 and all(r.exc_info for r in said)
