"""Settings for so-many-crows. Everything comes from the environment, with defaults that
give a complete offline flock (SQLite, in-process channel layer, the mock brain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from crows_site.env import env_bool, env_float, env_int, env_origins, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent

CROWS_DATA_DIR = Path(env_str("CROWS_DATA_DIR", str(BASE_DIR / ".data")))

# The secret signs Django's own cookies (CSRF) and keys the owner's login cookie
# (crows_site/security.py); a fixed development value is acceptable on loopback, where
# no token is needed. Set it together with CROWS_OWNER_TOKEN beyond loopback.
SECRET_KEY = env_str("SECRET_KEY", "so-many-crows-local-only-not-a-secret")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",") if h]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    # Only for its static files: /api/docs serves Swagger UI from here, never from a CDN.
    "ninja",
    # flock before django_tasks_db: its `db_worker` (threads, leases) replaces the stock one.
    "flock.apps.FlockConfig",
    "django_tasks_db",
    "trust.apps.TrustConfig",
    "nests.apps.NestsConfig",
]

MIDDLEWARE = [
    # First, so its header is on every response Django makes, a refusal's included.
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "crows_site.middleware.ApiErrorsAsJson",
    "crows_site.middleware.NotMigratedYet",
    "crows_site.security.OwnerGateMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "crows_site.urls"
ASGI_APPLICATION = "crows_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "crows_site.logins.login_context",
            ],
        },
    },
]


def _database(worker_threads: int) -> dict[str, Any]:
    url = env_str("DATABASE_URL", "")
    if not url:
        CROWS_DATA_DIR.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{CROWS_DATA_DIR / 'crows.sqlite3'}"
    scheme = urlparse(url).scheme
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url))
    except Exception as exc:  # dj_database_url raises a bare ValueError/KeyError on junk
        raise ImproperlyConfigured(f"DATABASE_URL could not be read: {exc}") from None
    engine = config.get("ENGINE", "")
    if engine.endswith("sqlite3"):
        # Measured (docs/STREAM.md, docs/PERFORMANCE.md): WAL + IMMEDIATE + a long timeout lost no
        # writes under 32 concurrent writers, where Django's defaults lost half.
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;",
        }
        config["TEST"] = {"NAME": env_str("CROWS_TEST_DB", "") or None}
        # Keep each thread's connection between requests and tasks: opening one (and
        # running the PRAGMAs above) was about a tenth of a nest POST's CPU
        # (docs/PERFORMANCE.md). Autocommit leaves no transaction open between uses, so a
        # kept connection holds no snapshot and never blocks a WAL checkpoint.
        config["CONN_MAX_AGE"] = None
    elif engine.endswith("postgresql"):
        # Late: settings load before django.db (which flock.db imports) may be.
        from flock.db import pool_size_for

        # Sized for the worker threads as well as the requests: a fixed 20 left 12 of 32
        # worker threads queueing about 180 ms for a connection on every task, and any
        # owner request queued behind them (docs/PERFORMANCE.md).
        config["OPTIONS"] = {"pool": {"min_size": 2, "max_size": pool_size_for(worker_threads), "timeout": 20}}
        config["CONN_MAX_AGE"] = 0
    else:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a sqlite:// or postgres:// URL, got scheme {scheme!r}"
        )
    return config


DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    if urlparse(REDIS_URL).scheme not in ("redis", "rediss", "unix"):
        raise ImproperlyConfigured(f"REDIS_URL must be a redis:// URL, got {REDIS_URL!r}")
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    # One process is a complete flock: the stream's hub fans out in-process and the
    # channel layer is only the cross-process doorbell, so in-memory is enough here.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
    }
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = CROWS_DATA_DIR / "staticfiles"

# Who may act as the owner (docs/SECURITY.md). Without a token only loopback is served.
# A short token is guessed, rate limit or not: start-up refuses one.
OWNER_TOKEN_MIN_CHARS = 24
CROWS_OWNER_TOKEN = env_str("CROWS_OWNER_TOKEN", "")
if CROWS_OWNER_TOKEN and len(CROWS_OWNER_TOKEN) < OWNER_TOKEN_MIN_CHARS:
    raise ImproperlyConfigured(
        f"CROWS_OWNER_TOKEN must be at least {OWNER_TOKEN_MIN_CHARS} characters, got {len(CROWS_OWNER_TOKEN)}: "
        "make a random one with `CROWS_OWNER_TOKEN= python manage.py owner_token`"
    )
# A login lasts this many days unless /logout ends it first.
CROWS_SESSION_DAYS = env_int("CROWS_SESSION_DAYS", 30, minimum=1, maximum=3650)
# Wrong owner tokens (at /login, or as a Bearer) a client address may send in a minute
# before it gets 429 (crows_site/logins.py).
CROWS_AUTH_FAILURES_PER_MIN = env_int("CROWS_AUTH_FAILURES_PER_MIN", 10, minimum=1, maximum=100_000)
CROWS_ALLOWED_ORIGINS = env_origins("CROWS_ALLOWED_ORIGINS")
CSRF_TRUSTED_ORIGINS = list(CROWS_ALLOWED_ORIGINS)
CSRF_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Every page's scripts, styles, fonts and requests come from this server alone: no inline
# script or style, no eval, no other origin (docs/SECURITY.md "Content-Security-Policy").
# `data:` images are the one addition: Swagger UI's stylesheet draws its icons with them.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# Bodies larger than this get a 413 from the API before any parsing.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("CROWS_MAX_BODY_BYTES", 256 * 1024, minimum=1024)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redis_outage": {"()": "flock.stream.quiet_outage.RedisOutageLogs"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("CROWS_LOG_LEVEL", "WARNING")},
    "loggers": {
        "crows": {"level": env_str("CROWS_LOG_LEVEL", "INFO"), "propagate": True},
        # A traceback a second while Redis is down, otherwise (flock/stream/quiet_outage.py).
        "channels_redis.pubsub": {"filters": ["redis_outage"], "propagate": True},
    },
}

# ---------------------------------------------------------------------------------------
# The flock's knobs (README "Configuration"). Names and defaults are part of the contract.
# ---------------------------------------------------------------------------------------
CROWS_BRAIN = env_str("CROWS_BRAIN", "mock")
CROWS_HEARTBEAT_S = env_float("CROWS_HEARTBEAT_S", 15.0, minimum=0.05)
CROWS_LIST_TOKEN_BUDGET = env_int("CROWS_LIST_TOKEN_BUDGET", 20000, minimum=0)
CROWS_ITEM_TOKEN_BUDGET = env_int("CROWS_ITEM_TOKEN_BUDGET", 6000, minimum=0)
CROWS_MAX_IN_FLIGHT = env_int("CROWS_MAX_IN_FLIGHT", 6, minimum=1)
CROWS_MAX_CROWS_PER_ITEM = 3
CROWS_APPROVAL_TIMEOUT_S = env_float("CROWS_APPROVAL_TIMEOUT_S", 600.0, minimum=0.1)
CROWS_TRUST_STREAK = env_int("CROWS_TRUST_STREAK", 3, minimum=1)
CROWS_LIST_RATE_PER_MIN = env_int("CROWS_LIST_RATE_PER_MIN", 10, minimum=1)
CROWS_NEST_POST_RATE_PER_MIN = env_int("CROWS_NEST_POST_RATE_PER_MIN", 30, minimum=1)
CROWS_PRANK_COOLDOWN_S = env_int("CROWS_PRANK_COOLDOWN_S", 60, minimum=1)
CROWS_EXCHANGES_PER_TURN = env_int("CROWS_EXCHANGES_PER_TURN", 12, minimum=0)
CROWS_NEST_TOKEN_BUDGET = env_int("CROWS_NEST_TOKEN_BUDGET", 50000, minimum=0)
CROWS_MAX_NESTS = 20
CROWS_BANTER_WAIT_S = env_float("CROWS_BANTER_WAIT_S", 20.0, minimum=0)
# Governance (docs/GOVERNANCE.md): an owner decision left unanswered this long closes as
# `timeout` (the crow stays quarantined); one crow reply over this many tokens is a breach.
CROWS_DECISION_TIMEOUT_S = env_float("CROWS_DECISION_TIMEOUT_S", 86400.0, minimum=0.1, maximum=365 * 86400)
CROWS_REPLY_TOKEN_CAP = env_int("CROWS_REPLY_TOKEN_CAP", 4000, minimum=1, maximum=10_000_000)
# Days of history to keep; 0 (the default) keeps everything. Set, it prunes daily.
CROWS_RETENTION_DAYS = env_int("CROWS_RETENTION_DAYS", 0, minimum=0, maximum=36500)
# Boss proposes retiring a crow idle this many days (docs/GOVERNANCE.md, 3); 0 (the
# default) is off. Only a proposal: the owner's phrase retires it.
CROWS_IDLE_RETIRE_DAYS = env_int("CROWS_IDLE_RETIRE_DAYS", 0, minimum=0, maximum=36500)
# Work that doesn't stall (docs/GOVERNANCE.md): an expectation that names no time of its own
# is due this long after it opens, and each nudge gives the crow this long again; a debate
# runs this many rounds unless the owner says otherwise; a crow's prompt carries at most
# this many tokens of what it remembers from other rooms; an orchestration pick scoring
# below this goes back to the picker as a nudge.
CROWS_EXPECTATION_DUE_S = env_float("CROWS_EXPECTATION_DUE_S", 600.0, minimum=0, maximum=30 * 86400)
CROWS_DEBATE_ROUNDS = env_int("CROWS_DEBATE_ROUNDS", 2, minimum=1, maximum=5)
CROWS_MEMORY_TOKENS = env_int("CROWS_MEMORY_TOKENS", 400, minimum=0, maximum=20000)
CROWS_ORCHESTRATION_LOW_SCORE = env_float("CROWS_ORCHESTRATION_LOW_SCORE", 0.35, minimum=0, maximum=1)

# Background work: the server runs its own worker unless scaled out to db_worker processes.
CROWS_EMBEDDED_WORKER = env_bool("CROWS_EMBEDDED_WORKER", True)
CROWS_WORKER_THREADS = env_int("CROWS_WORKER_THREADS", 8, minimum=1, maximum=64)
DATABASES = {"default": _database(CROWS_WORKER_THREADS)}  # its pool is sized for the threads
CROWS_WORKER_POLL_S = env_float("CROWS_WORKER_POLL_S", 0.5, minimum=0.01)
# A worker's claim on a task lasts this long unless its heartbeat renews it; a task whose
# worker died runs again elsewhere once its lease runs out (docs/STREAM.md).
CROWS_TASK_LEASE_S = env_float("CROWS_TASK_LEASE_S", 30.0, minimum=0.5, maximum=3600.0)

# How often a process with open streams looks for events written by another process
# (a management command, a db_worker) when no cross-process channel layer told it.
CROWS_STREAM_POLL_S = env_float("CROWS_STREAM_POLL_S", 1.0, minimum=0.05)

# A stream client whose unsent data passes this many KiB is closed; it reconnects with
# Last-Event-ID and loses nothing (docs/STREAM.md).
CROWS_STREAM_MAX_BUFFER_KB = env_int("CROWS_STREAM_MAX_BUFFER_KB", 1024, minimum=16, maximum=1024 * 1024)

# Jev's trained models are cached here, keyed by their data; several servers may share it.
CROWS_JEV_CACHE_DIR = env_str("CROWS_JEV_CACHE_DIR", str(CROWS_DATA_DIR / "jev"))

# Brains (flock/brains): the mock brain is the offline default.
CROWS_MOCK_LATENCY_MS = env_float("CROWS_MOCK_LATENCY_MS", 0.0, minimum=0)
CROWS_MOCK_FAIL_RATE = env_float("CROWS_MOCK_FAIL_RATE", 0.0, minimum=0, maximum=1)
CROWS_OPENAI_BASE_URL = env_url("CROWS_OPENAI_BASE_URL")
CROWS_OPENAI_API_KEY = env_str("CROWS_OPENAI_API_KEY", "")
CROWS_ANTHROPIC_BASE_URL = env_url("CROWS_ANTHROPIC_BASE_URL")
CROWS_ANTHROPIC_API_KEY = env_str("CROWS_ANTHROPIC_API_KEY", "")
CROWS_BRAIN_TIMEOUT_S = env_float("CROWS_BRAIN_TIMEOUT_S", 30.0, minimum=0.1)
CROWS_BRAIN_RETRIES = env_int("CROWS_BRAIN_RETRIES", 1, minimum=0, maximum=10)
# Test connection (POST /api/brains/test) answers within this many seconds, whatever the brain does.
CROWS_BRAIN_TEST_TIMEOUT_S = env_float("CROWS_BRAIN_TEST_TIMEOUT_S", 10.0, minimum=0.1, maximum=600)
# Where `script:` brains other than CROWS_BRAIN's own may be read from; unset, none may
# (docs/SECURITY.md "Scripted brains").
CROWS_SCRIPT_DIR = env_str("CROWS_SCRIPT_DIR", "")
if CROWS_SCRIPT_DIR and not Path(CROWS_SCRIPT_DIR).expanduser().is_dir():
    raise ImproperlyConfigured(f"CROWS_SCRIPT_DIR must be a directory, got {CROWS_SCRIPT_DIR!r}")
# Jev asks the real brain (never the mock) about tags it is unsure of (docs/JEV.md).
CROWS_JEV_LLM = env_bool("CROWS_JEV_LLM", False)
