import os

BASE = os.environ.get("ES_DATA_DIR", "/tmp")
SECRET_KEY = "bench-only"
DEBUG = False
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = ["daphne", "django.contrib.contenttypes", "django.contrib.auth", "django_eventstream"]
MIDDLEWARE = []
ROOT_URLCONF = "eventstream_app.urls"
ASGI_APPLICATION = "eventstream_app.asgi.application"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(BASE, "eventstream.sqlite3"),
        # The same SQLite settings as so-many-crows (WAL, IMMEDIATE, long timeout).
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;",
        },
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
EVENTSTREAM_STORAGE_CLASS = "django_eventstream.storage.DjangoModelStorage"
