"""Django settings, read from the environment in this one module (see ``.env.example``).

The embedded default needs nothing: SQLite and the in-memory channel layer, with the data
directory outside the code tree. ``DATABASE_URL`` switches to PostgreSQL and ``REDIS_URL`` to
channels-redis (then run workers with ``manage.py runworker agent-runs``). With
``CONFAB_ENV=production`` the secrets must be given; in development they are generated once and
kept in the data directory.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet
from django.utils.csp import CSP

from config.env import (
    EnvError,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_origin,
    env_path,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
CONFAB_ENV = env_str("CONFAB_ENV", "development")
if CONFAB_ENV not in ("development", "production", "test"):
    raise EnvError(f"CONFAB_ENV={CONFAB_ENV!r}: expected development, production or test")
PRODUCTION = CONFAB_ENV == "production"

# Data (SQLite file, workspaces, wiki repositories) lives outside the code tree.
DATA_DIR = env_path("CONFAB_DATA_DIR", Path.home() / ".local" / "share" / "confab")
WORKSPACES_DIR = env_path("CONFAB_WORKSPACES_DIR", DATA_DIR / "workspaces")
# One bare git repository per team (<team id>.git) and the read-only snapshots runs see.
WIKI_DIR = env_path("CONFAB_WIKI_DIR", DATA_DIR / "wiki")
# Images people attach to messages, per team (<team id>/<image id>): never inside a workspace,
# where the agent's tools could read or replace another conversation's images.
IMAGES_DIR = env_path("CONFAB_IMAGES_DIR", DATA_DIR / "images")
if IMAGES_DIR.resolve().is_relative_to(WORKSPACES_DIR.resolve()) or \
        WORKSPACES_DIR.resolve().is_relative_to(IMAGES_DIR.resolve()):
    raise EnvError(f"CONFAB_IMAGES_DIR={IMAGES_DIR} overlaps the workspaces ({WORKSPACES_DIR})")


def _generated_secret(name: str, make: str) -> str:
    """A development secret, made once and kept in the data directory."""
    path = DATA_DIR / "secrets" / name
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = Fernet.generate_key().decode() if make == "fernet" else secrets.token_urlsafe(50)
    path.write_text(value)
    path.chmod(0o600)
    return value


def _secret(env_name: str, file_name: str, make: str) -> str:
    value = env_str(env_name)
    if value:
        return value
    if PRODUCTION:
        raise EnvError(f"{env_name} must be set when CONFAB_ENV=production")
    return _generated_secret(file_name, make)


SECRET_KEY = _secret("DJANGO_SECRET_KEY", "django_secret_key", "token")
# Keys for secrets at rest (API keys, MCP headers): their own, never SECRET_KEY. Comma-separated
# Fernet keys, newest first; rotate by prepending a new key (see apps/integrations/crypto.py).
CONFAB_FERNET_KEYS = env_list("CONFAB_FERNET_KEYS") or [
    _secret("CONFAB_FERNET_KEYS", "fernet_key", "fernet")
]

# Off unless asked for (DJANGO_DEBUG=1), also in development and `make demo`: Django's debug
# pages show settings and every URL pattern. Static files do not need it (config/asgi.py).
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "apps.common",  # first: Daphne's reactor on the configured event loop (apps/common/apps.py)
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",  # serves its Swagger UI assets locally (the CDN page would break our CSP)
    "apps.accounts",
    "apps.integrations",
    "apps.realtime",
    "apps.wiki",
    "apps.rooms",
    "apps.api",
    "channels",  # after apps.rooms, whose runworker (outlasting a Redis outage, closing the pools
    # at exit) overrides its own
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the cookie, else Accept-Language
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.accounts.middleware.PersonLanguageMiddleware",  # the person's own choice wins
    "apps.accounts.middleware.PersonTimeZoneMiddleware",  # dates in the person's zone
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context_processors.teams",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'confab.sqlite3'}"),
        # Reused connections: each database_sync_to_async call would otherwise open one (and
        # PostgreSQL a process): ~3x the run capacity in bench_fanout.
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Runs write from the worker while sockets read: WAL and a busy timeout keep SQLite calm.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # channels-redis's layer on pools that wait for a free connection rather than fail
            # a burst of joins and leaves (apps/realtime/core_layer.py).
            "BACKEND": "apps.realtime.core_layer.BlockingPoolRedisChannelLayer",
            # socket_timeout above channels-redis's 5 s blocking read: with redis-py's default
            # of 5 s an idle layer times out and closes sockets (redis/redis-py#4091).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                       "capacity": 1500, "expiry": 60},
        },
        # Conversation and room groups: one PUBLISH per message (a write's in one command), one
        # delivery per process (apps/realtime/broadcast.py, apps/realtime/pubsub.py).
        "broadcast": {
            "BACKEND": "apps.realtime.pubsub.BatchedPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}]},
        },
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
                      "broadcast": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds the login throttle's counters: shared by every process when Redis is there.
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "confab",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# The one backend: Django's, with failed sign-ins counted per username and address
# (apps/accounts/throttle.py); it covers every login form, the admin's included.
AUTHENTICATION_BACKENDS = ["apps.accounts.throttle.ThrottledModelBackend"]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en"
# English is the source; each language is named in itself (a switch reads in its own language).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]  # .po and compiled .mo, committed (`make messages`)
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env_path("DJANGO_STATIC_ROOT", DATA_DIR / "static")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Content-Security-Policy (Django's built-in support): no inline script, no third-party origin.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", PRODUCTION)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True

# Mail (password resets, invitations): the console by default (Django 6.1's MAILERS setting).
MAILERS = {
    "default": {
        "BACKEND": env_str("DJANGO_EMAIL_BACKEND",
                           "django.core.mail.backends.console.EmailBackend"),
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("CONFAB_LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}

# -- confab ------------------------------------------------------------------------------------
CONFAB = {
    # Runs
    "APPROVAL_TIMEOUT_S": env_float("CONFAB_APPROVAL_TIMEOUT_S", 600.0),
    "ASK_TIMEOUT_S": env_float("CONFAB_ASK_TIMEOUT_S", 900.0),
    "ELICITATION_TIMEOUT_S": env_float("CONFAB_ELICITATION_TIMEOUT_S", 600.0),
    # The longest message (and AskUser answer) a person can send, in characters: the server
    # refuses a longer one and the composer says so before sending.
    "MESSAGE_MAX_CHARS": env_int("CONFAB_MESSAGE_MAX_CHARS", 32_000),
    "HEARTBEAT_S": env_float("CONFAB_HEARTBEAT_S", 5.0),
    "STALE_AFTER_S": env_float("CONFAB_STALE_AFTER_S", 30.0),
    "CLAIM_TIMEOUT_S": env_float("CONFAB_CLAIM_TIMEOUT_S", 20.0),
    "MAX_DISPATCHES": env_int("CONFAB_MAX_DISPATCHES", 3),
    "MAX_ITERATIONS": env_int("CONFAB_MAX_ITERATIONS", 50),
    # The longest silence (s) allowed between two reads of a provider's stream: past it the
    # stream counts as interrupted (retried only before any output).
    "PROVIDER_READ_TIMEOUT_S": env_float("CONFAB_PROVIDER_READ_TIMEOUT_S", 120.0),
    # A session-notes agent still working when its run ends gets this long (s) after the end;
    # the conversation's next run cancels it sooner.
    "NOTES_TIMEOUT_S": env_float("CONFAB_NOTES_TIMEOUT_S", 120.0),
    # The notes agent folds the conversation in once this many tokens (estimated, as for
    # compaction) or tool calls have passed since it last did: each time is a model request.
    "NOTES_MIN_TOKENS": env_int("CONFAB_NOTES_MIN_TOKENS", 8_000, minimum=1),
    "NOTES_MIN_TOOL_CALLS": env_int("CONFAB_NOTES_MIN_TOOL_CALLS", 8, minimum=1),
    # After 3 failed compactions in a row, automatic compaction waits this long (s) before it
    # tries again; a member's "compact now" does not wait.
    "COMPACTION_COOLDOWN_S": env_float("CONFAB_COMPACTION_COOLDOWN_S", 600.0),
    # Streaming to the room: deltas are coalesced before the channel layer.
    "COALESCE_MS": env_float("CONFAB_COALESCE_MS", 50.0),
    "COALESCE_BYTES": env_int("CONFAB_COALESCE_BYTES", 2048),
    # The log's tail (seconds): a run's host sends its high-water mark this often, and a socket
    # whose group was quiet this long reads the last seq from the store (keep the first lower).
    "HWM_INTERVAL_S": env_float("CONFAB_HWM_INTERVAL_S", 2.0),
    "TAIL_CHECK_S": env_float("CONFAB_TAIL_CHECK_S", 3.0),
    # Presence (seconds): a socket sends its client at most one presence frame per interval
    # (joins and leaves meanwhile are gathered), and relays its person's typing at most once
    # per TYPING_INTERVAL_S (clients show it for 4 s).
    "PRESENCE_INTERVAL_S": env_float("CONFAB_PRESENCE_INTERVAL_S", 0.2),
    "TYPING_INTERVAL_S": env_float("CONFAB_TYPING_INTERVAL_S", 2.0),
    # History: a state frame (and each older page) carries at most this many messages and,
    # past the first, this many bytes of them; a socket that reconnects having missed more
    # than REPLAY_MAX_EVENTS events gets a fresh state frame instead of the replay.
    "HISTORY_PAGE_MESSAGES": env_int("CONFAB_HISTORY_PAGE_MESSAGES", 50),
    "HISTORY_PAGE_BYTES": env_int("CONFAB_HISTORY_PAGE_BYTES", 40_000),
    "REPLAY_MAX_EVENTS": env_int("CONFAB_REPLAY_MAX_EVENTS", 1_000),
    # Tools
    "ALLOW_PRIVATE_NETWORK": env_bool("CONFAB_ALLOW_PRIVATE_NETWORK", False),
    # The origin people reach confab at (https://confab.example.com), for URLs given to other
    # servers (the MCP sign-in's redirect URI); unset: the request's own origin.
    "PUBLIC_URL": env_origin("CONFAB_PUBLIC_URL"),
    "SANDBOX": env_str("CONFAB_SANDBOX", "auto"),
    # MCP servers stay open between runs in each worker: closed after this many idle seconds;
    # at most this many stdio server processes per worker (least recently used go first).
    "MCP_IDLE_TIMEOUT_S": env_float("CONFAB_MCP_IDLE_TIMEOUT_S", 300.0),
    "MCP_MAX_PROCESSES": env_int("CONFAB_MCP_MAX_PROCESSES", 16),
    # Rate limit on messages a person sends (per minute).
    "MESSAGES_PER_MINUTE": env_int("CONFAB_MESSAGES_PER_MINUTE", 30),
    # Sign-in throttle: failures allowed per username and address, per address alone, and
    # the window (seconds) they are counted in; at the limit, sign-in waits for the window.
    "LOGIN_FAILURES": env_int("CONFAB_LOGIN_FAILURES", 5),
    "LOGIN_ADDRESS_FAILURES": env_int("CONFAB_LOGIN_ADDRESS_FAILURES", 50),
    "LOGIN_WINDOW_S": env_int("CONFAB_LOGIN_WINDOW_S", 900),
    # Sign-up and password reset: attempts allowed per email address and per client (address)
    # in that same window; past either, the form refuses (429) and does nothing.
    "SIGNUP_ATTEMPTS": env_int("CONFAB_SIGNUP_ATTEMPTS", 5),
    "SIGNUP_CLIENT_ATTEMPTS": env_int("CONFAB_SIGNUP_CLIENT_ATTEMPTS", 20),
    "PASSWORD_RESET_ATTEMPTS": env_int("CONFAB_PASSWORD_RESET_ATTEMPTS", 5),
    "PASSWORD_RESET_CLIENT_ATTEMPTS": env_int("CONFAB_PASSWORD_RESET_CLIENT_ATTEMPTS", 20),
    # The team wiki (sizes in bytes): a page, an attachment, everything at main together.
    "WIKI_PAGE_BYTES": env_int("CONFAB_WIKI_PAGE_BYTES", 512 * 1024),
    "WIKI_ATTACHMENT_BYTES": env_int("CONFAB_WIKI_ATTACHMENT_BYTES", 10 * 1024 * 1024),
    "WIKI_QUOTA_BYTES": env_int("CONFAB_WIKI_QUOTA_BYTES", 512 * 1024 * 1024),
    # Images attached to messages: the largest upload (bytes) and the most per message.
    "IMAGE_MAX_BYTES": env_int("CONFAB_IMAGE_MAX_BYTES", 10 * 1024 * 1024),
    "IMAGES_PER_MESSAGE": env_int("CONFAB_IMAGES_PER_MESSAGE", 8),
    "WIKI_GIT_BACKENDS": env_int("CONFAB_WIKI_GIT_BACKENDS", 4),  # clones at once per process
    # The event loop of the run workers (`manage.py runworker`) and of Daphne (`manage.py
    # serve`, `python -m config.daphne`): uvloop or asyncio (apps.common.event_loops).
    "EVENT_LOOP": env_str("CONFAB_EVENT_LOOP", "uvloop"),
    # The offline model server `manage.py serve` starts beside Daphne.
    "FAKELLM_URL": env_str("CONFAB_FAKELLM_URL", "http://127.0.0.1:8001"),
    # Serve /static/ from the app (the embedded default); 0 when a proxy serves collectstatic.
    "SERVE_STATIC": env_bool("CONFAB_SERVE_STATIC", True),
}
