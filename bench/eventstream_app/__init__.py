"""A minimal Django project serving django-eventstream, for bench/stream.py's comparison.

It runs in its own venv (created by bench/_eventstream.py, never the project's), answering
the paths the bench uses against so-many-crows:
- GET /api/events?nest_id=X[&since=N]: django-eventstream's `events` view on channel X
  (with `since`, the Last-Event-ID `X:N` it understands);
- POST /api/nests/X/messages: `send_event(X, "message", {...})`, stored by
  DjangoModelStorage (so reconnecting clients can resume), answers 201;
- GET /api/state: 200.
"""
