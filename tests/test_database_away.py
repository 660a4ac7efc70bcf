"""When the database does not answer (PostgreSQL restarting, SQLite locked past its
timeout), the API says so with a 503 and Retry-After instead of a 500 that reads like a
bug; a database error that is a bug stays a 500. Both keep the {"message"} shape."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.utils import InterfaceError, OperationalError, ProgrammingError

from flock import db as flock_db
from nests import actions

pytestmark = pytest.mark.django_db


def _post(client):
    return client.post(
        "/api/nests/todo/messages", {"author": "owner", "text": "are you there?"}, content_type="application/json"
    )


@pytest.mark.parametrize("error", [OperationalError("database is locked"), OperationalError("database table is locked")])
def test_sqlite_locked_past_its_timeout_is_a_503_with_retry_after(client, monkeypatch, error):
    def locked(*args, **kwargs):
        raise error

    monkeypatch.setattr(actions, "post_message", locked)
    response = _post(client)
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert "database is not answering" in response.json()["message"]


def test_a_database_error_that_is_a_bug_stays_a_500(client, monkeypatch):
    def broken(*args, **kwargs):
        raise OperationalError("no such table: nests_nestmessage")

    monkeypatch.setattr(actions, "post_message", broken)
    response = _post(client)
    assert response.status_code == 500
    assert set(response.json()) == {"message"}


@pytest.mark.parametrize(
    "error",
    [
        OperationalError("connection failed: Connection refused"),
        OperationalError("couldn't get a connection after 20.00 sec"),  # psycopg_pool's PoolTimeout
        InterfaceError("connection already closed"),
    ],
)
def test_on_postgresql_every_operational_or_interface_error_is_a_503(client, monkeypatch, error):
    def away(*args, **kwargs):
        raise error

    monkeypatch.setattr(actions, "post_message", away)
    monkeypatch.setattr(connection, "vendor", "postgresql")
    response = _post(client)
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert set(response.json()) == {"message"}


@pytest.mark.parametrize(
    "error", [OperationalError("no such table: nests_nestmessage"), ProgrammingError('relation "flock_event" does not exist')]
)
def test_a_server_on_a_database_not_migrated_yet_says_to_migrate(client, monkeypatch, error):
    # A server started before `manage.py migrate`, its embedded worker off (scale-out), so
    # nothing stopped it at start-up: every request says what to do instead of a bare 500.
    def missing_table(*args, **kwargs):
        raise error

    monkeypatch.setattr(actions, "post_message", missing_table)
    monkeypatch.setattr(flock_db, "_migrated", False)
    monkeypatch.setattr(flock_db, "unapplied_migrations", lambda: 63)
    response = _post(client)
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert response.json() == {
        "message": "the database has 63 migration(s) not applied yet: run `manage.py migrate --noinput` first"
    }


def test_a_page_of_a_server_not_migrated_yet_says_to_migrate(client, monkeypatch):
    from nests import views

    def missing_table(*args, **kwargs):
        raise OperationalError("no such table: flock_event")

    monkeypatch.setattr(flock_db, "_migrated", False)
    monkeypatch.setattr(flock_db, "unapplied_migrations", lambda: 63)
    monkeypatch.setattr(views, "_flock_page_cursor", missing_table)
    response = client.get("/")
    assert response.status_code == 503
    assert response.content.decode().startswith("the database has 63 migration(s) not applied yet")


def test_once_the_database_is_known_migrated_it_is_not_asked_again_and_outages_never(monkeypatch):
    asked = []
    monkeypatch.setattr(flock_db, "_migrated", False)
    monkeypatch.setattr(flock_db, "unapplied_migrations", lambda: asked.append(1) or 0)
    # An outage (SQLite still locked): the database would be waited for a second time.
    assert flock_db.lacks_migrations(OperationalError("database is locked")) == 0 and asked == []
    assert flock_db.lacks_migrations(OperationalError("no such table: flock_event")) == 0 and asked == [1]
    assert flock_db.lacks_migrations(OperationalError("no such table: flock_event")) == 0 and asked == [1]
