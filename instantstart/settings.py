"""Django settings for InstantStart, read from environment variables.

Three modes (INSTANTSTART_MODE):
- ``standalone`` (default; ``make run``): SQLite under ``var/``, a file-system Celery broker under
  ``var/``, an in-memory channel layer, the sandbox cloud. No external service.
- ``production``: PostgreSQL from DATABASE_URL, Redis from REDIS_URL, SECRET_KEY required, no debug,
  HTTPS behind a TLS-terminating proxy (``manage.py check --deploy`` is clean with the defaults).
  The container's all-in-one command (``python -m instantstart.allinone``, which sets
  INSTANTSTART_ALL_IN_ONE) may instead keep SQLite, the file broker and a generated secret key on
  its volume, as standalone does; separately scaled web/worker/beat processes never do.
- ``test`` (``make test``): PostgreSQL and Redis on 127.0.0.1.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .envvars import env_bool, env_choice, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
MODE = env_choice("INSTANTSTART_MODE", "standalone", ("standalone", "production", "test"))
VAR_DIR = Path(env_str("INSTANTSTART_VAR_DIR", str(BASE_DIR / "var")))
# One process tree that owns its state directory: standalone, or the container's all-in-one
# command. Only such a tree may fall back to SQLite and the file broker: two scaled web
# containers each with a SQLite file of their own would silently split the data.
ALL_IN_ONE = MODE == "production" and env_bool("INSTANTSTART_ALL_IN_ONE", False)
LOCAL_STATE = MODE == "standalone" or ALL_IN_ONE

if LOCAL_STATE:
    VAR_DIR.mkdir(parents=True, exist_ok=True)


def _standalone_secret_key() -> str:
    # Kept on disk so sessions survive a restart of `make run`.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


# Health probes (the container's HEALTHCHECK, compose, a load balancer, the stack's cfn-signal) and
# an SSM port-forwarding session reach the app as localhost; a URL built for these names points
# at the caller's own machine, never at a host an attacker controls.
LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

if MODE == "production":
    SECRET_KEY = env_str("SECRET_KEY", required=not ALL_IN_ONE) or _standalone_secret_key()
    DEBUG = env_bool("DEBUG", False)
    if DEBUG:
        raise ImproperlyConfigured("DEBUG must be off in production mode")
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
    if not ALLOWED_HOSTS and not ALL_IN_ONE:  # all-in-one alone may be reached on loopback only
        raise ImproperlyConfigured("ALLOWED_HOSTS must be set in production mode")
    ALLOWED_HOSTS += [host for host in LOOPBACK_HOSTS if host not in ALLOWED_HOSTS]
elif MODE == "test":
    SECRET_KEY = "test-only-insecure-key"
    DEBUG = False
    ALLOWED_HOSTS = ["*"]
else:
    SECRET_KEY = env_str("SECRET_KEY") or _standalone_secret_key()
    # Off unless asked for: users see the project's 404/403/500 pages, not Django's debug pages.
    DEBUG = env_bool("DEBUG", False)
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])


def _https_origins(hosts: list[str]) -> list[str]:
    """The HTTPS origins of the served names (`.example.com` → `https://*.example.com`)."""
    origins = []
    for host in hosts:
        if host in LOOPBACK_HOSTS or host == "*":
            continue  # loopback is same-origin through a port forward; "*" is no origin
        origins.append(f"https://*{host}" if host.startswith(".") else f"https://{host}")
    return origins


# Behind a proxy that rewrites Host, the browser's Origin is the public name: trust exactly the
# names the site answers to, over HTTPS, unless told otherwise.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", _https_origins(ALLOWED_HOSTS) if MODE == "production" else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",  # throttles failed portal/admin logins (AXES_* below)
    "instantstart.tenancy",
    "instantstart.operations",
    "instantstart.portal",
    "clusters",
    "features",
    "inference",
    "training",
    "agent_tools",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Errors under /api/ are JSON in the error shape in every mode (404, 405, 413, 500 included).
    "instantstart.api.middleware.ApiErrorMiddleware",
    # Static files (portal CSS, vendored htmx, Swagger UI) from the app itself in every mode; under
    # ASGI their chunks are handed over asynchronously (no warning per request).
    "instantstart.portal.async_files.AsyncFileResponseMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "instantstart.tenancy.middleware.CurrentTeamMiddleware",
    "instantstart.security.SecurityHeadersMiddleware",
    # Last, as django-axes asks: answers a locked-out login with 429.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "instantstart.urls"
ASGI_APPLICATION = "instantstart.asgi.application"

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
                "instantstart.portal.context.portal",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
if LOCAL_STATE and not env_str("DATABASE_URL"):
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "instantstart.sqlite3",
            # The worker and the web server share the file: wait for locks instead of failing.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
else:
    default_url = "postgres://postgres@127.0.0.1:5432/instantstart" if MODE == "test" else None
    url = env_str("DATABASE_URL", default_url, required=MODE == "production")
    # The web server (ASGI) takes its connections from a pool (psycopg_pool): Django keeps no persistent
    # connection under ASGI (its docs say to pool instead of CONN_MAX_AGE), so without one every request
    # and every socket's database trip opened a PostgreSQL connection. Workers keep their own per-thread
    # connections instead (instantstart/celery.py turns the pool off there).
    DB_POOL = env_bool("DB_POOL", MODE != "test")
    DATABASES = {"default": dj_database_url.parse(url, conn_max_age=0 if DB_POOL else env_int("DB_CONN_MAX_AGE", 0))}
    if DB_POOL:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": env_int("DB_POOL_MIN_SIZE", 2, minimum=0),
            "max_size": env_int("DB_POOL_MAX_SIZE", 16, minimum=1),
            "timeout": env_float("DB_POOL_TIMEOUT_SECONDS", 10.0, minimum=0.1),  # waiting for a free one
        }
    if MODE == "test":
        # Lets parallel checkouts (or a worker started by a test) use their own test database.
        DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", "test_instantstart")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- broker, channel layer ------------------------------------------------------------------
REDIS_URL = env_str(
    "REDIS_URL",
    "redis://127.0.0.1:6379/0" if MODE == "test" else None,
    required=MODE == "production" and not ALL_IN_ONE,
)
# Redis holds a message that a worker took but has not acknowledged for this long, then gives it
# to another worker: a countdown (which a worker holds until it is due) must stay well below it.
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=2)
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
        # Look for messages of dead workers often enough to give them back soon after the timeout.
        "unacked_restore_interval": max(1, min(10, CELERY_VISIBILITY_TIMEOUT // 10)),
        "unacked_restore_throttle": 1,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
else:
    # Standalone and all-in-one: a broker that is just folders, so web server and worker (separate
    # processes of one tree) share it with no service running.
    BROKER_DIR = VAR_DIR / "broker"
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://localhost/"  # the host is unused; naming it keeps kombu quiet
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "instantstart")
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 240, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 300, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Worker pool: steps spend their time waiting on AWS/Kubernetes/PostgreSQL, so threads share one
# process well (bench/engine.py and bench/clusters.py measure it); `celery worker` reads these.
CELERY_WORKER_POOL = env_choice("CELERY_WORKER_POOL", "threads", ("threads", "prefork", "solo"))
# SQLite (standalone, all-in-one) lets one writer in at a time: fewer threads wait less on its lock.
_ON_SQLITE = DATABASES["default"]["ENGINE"].endswith("sqlite3")
CELERY_WORKER_CONCURRENCY = env_int("CELERY_WORKER_CONCURRENCY", 4 if _ON_SQLITE else 8, minimum=1)
# Celery's Django fixup closes every database connection before and after each task; this keeps
# it from doing so (instantstart/celery.py closes only what CONN_MAX_AGE says is obsolete).
CELERY_DB_REUSE_MAX = 1_000_000_000
# Seconds a worker keeps a database connection open (Django's CONN_MAX_AGE, in workers only): a
# new connection per task costs more than the advance it serves. 0 closes after every task.
WORKER_DB_CONN_MAX_AGE = env_int("WORKER_DB_CONN_MAX_AGE", 600, minimum=0)

# --- operations engine ----------------------------------------------------------------------
OPERATIONS = {
    # How long a worker holds an operation while running one step; an expired lease means the
    # worker died and the sweep may hand the operation to another worker.
    "LEASE_SECONDS": env_int("OPERATION_LEASE_SECONDS", 300, minimum=1),
    "SWEEP_INTERVAL_SECONDS": env_float("OPERATION_SWEEP_INTERVAL", 15.0, minimum=0.05),
    "TRANSIENT_RETRIES": env_int("OPERATION_TRANSIENT_RETRIES", 8, minimum=0),
    "BACKOFF_BASE_SECONDS": env_float("OPERATION_BACKOFF_BASE", 2.0, minimum=0.0),
    "BACKOFF_MAX_SECONDS": env_float("OPERATION_BACKOFF_MAX", 60.0, minimum=0.0),
    "DEFAULT_POLL_SECONDS": env_float("OPERATION_POLL_SECONDS", 10.0, minimum=0.0),
    # A finished phase runs the next one in the same task while the task has run less than this;
    # 0 sends every phase through the queue.
    "HANDOFF_SECONDS": env_float("OPERATION_HANDOFF_SECONDS", 60.0, minimum=0.0),
    # The longest countdown sent to the broker. A longer wait is kept in the database only and
    # the sweep sends its message when it comes due, so no worker holds it past the broker's
    # visibility timeout (which would deliver it twice).
    "MAX_COUNTDOWN_SECONDS": env_float("OPERATION_MAX_COUNTDOWN", 600.0, minimum=0.0),
    # Workers write a heartbeat this often; one silent for 4.5 times as long is dead, and the
    # sweep sends again the messages it may have held. Tests kill workers on purpose: 1 s there.
    "HEARTBEAT_SECONDS": env_float("WORKER_HEARTBEAT_INTERVAL", 1.0 if MODE == "test" else 10.0, minimum=0.05),
    # Multiplies every wait between polls. The sandbox runs real-world durations SANDBOX_SPEEDUP
    # times faster, so standalone polls that much more often by default.
    "POLL_SCALE": env_float(
        "OPERATION_POLL_SCALE",
        1.0 / env_float("SANDBOX_SPEEDUP", 20.0, minimum=0.01) if MODE == "standalone" else 1.0,
        minimum=0.0,
    ),
}
OPERATIONS["WORKER_STALE_SECONDS"] = 4.5 * OPERATIONS["HEARTBEAT_SECONDS"]
# A worker keeps the lease of an operation whose wait is at most this long and runs its next
# advance itself (operations/holding.py): no message, no claim. 0: every wait goes through the broker.
OPERATIONS["HOLD_SECONDS"] = env_float("OPERATION_HOLD_SECONDS", 600.0, minimum=0.0)
# Operations one worker process keeps at most; more wait through the broker.
OPERATIONS["HOLD_MAX"] = env_int("OPERATION_HOLD_MAX", 5000, minimum=0)
# A kept operation's lease: renewed while its worker lives; a killed worker's kept operations are
# resumed by others this long after its last renewal.
OPERATIONS["HOLD_LEASE_SECONDS"] = env_float(
    "OPERATION_HOLD_LEASE", 2 * OPERATIONS["WORKER_STALE_SECONDS"], minimum=0.5
)
# How often a worker looks for cancellations of the operations it keeps (and renews their leases).
OPERATIONS["HOLD_WATCH_SECONDS"] = env_float("OPERATION_HOLD_WATCH", 0.5, minimum=0.05)
# Last resort for a message that vanished from the broker itself (e.g. Redis restarted without
# persistence): a message still outstanding this long after it was sent is sent again.
OPERATIONS["MESSAGE_LOST_AFTER_SECONDS"] = env_float(
    "OPERATION_MESSAGE_LOST_AFTER",
    CELERY_VISIBILITY_TIMEOUT + OPERATIONS["MAX_COUNTDOWN_SECONDS"],
    minimum=1.0,
)
if REDIS_URL and OPERATIONS["MAX_COUNTDOWN_SECONDS"] > CELERY_VISIBILITY_TIMEOUT / 2:
    raise ImproperlyConfigured(
        f"OPERATION_MAX_COUNTDOWN={OPERATIONS['MAX_COUNTDOWN_SECONDS']:g} must be at most half of "
        f"CELERY_VISIBILITY_TIMEOUT={CELERY_VISIBILITY_TIMEOUT}: Redis would deliver longer countdowns twice"
    )
CELERY_BEAT_SCHEDULE = {
    "sweep-operations": {
        "task": "instantstart.operations.tasks.sweep",
        "schedule": OPERATIONS["SWEEP_INTERVAL_SECONDS"],
    }
}

# --- cloud ----------------------------------------------------------------------------------
# Where a sandbox team's AWS calls go. `make run` and the tests start the sandbox in process and
# set this; a separately started `python -m sandbox` prints the value to use.
SANDBOX_AWS_ENDPOINT = env_str("SANDBOX_AWS_ENDPOINT")
SANDBOX_SPEEDUP = env_float("SANDBOX_SPEEDUP", 20.0, minimum=0.01)
SANDBOX_STATE_DIR = env_str("SANDBOX_STATE_DIR", str(VAR_DIR / "sandbox"))
AWS_DEFAULT_REGION = env_str("AWS_DEFAULT_REGION", "us-west-2")

# --- training -------------------------------------------------------------------------------
# How often (real seconds) a job's operation reads its pods' logs and state, and a log socket the rows.
TRAINING_LOG_POLL_SECONDS = env_float("TRAINING_LOG_POLL_SECONDS", 0.25, minimum=0.05)
TRAINING_SOCKET_POLL_SECONDS = env_float("TRAINING_SOCKET_POLL_SECONDS", 0.05, minimum=0.02)
# Workers also follow each running pod's log (follow=true) and store lines as the kubelet writes them;
# the poll then reads only pods without a stream. A stream not renewed by its job's poll for this long
# (the operation moved to another worker, or ended) closes.
TRAINING_LOG_FOLLOW = env_bool("TRAINING_LOG_FOLLOW", True)
TRAINING_LOG_STREAM_IDLE_SECONDS = env_float("TRAINING_LOG_STREAM_IDLE_SECONDS", 15.0, minimum=1.0)
# Annotations every job's pods get (a JSON object), e.g. a mesh opt-out; the sandbox reads run steering here.
TRAINING_POD_ANNOTATIONS = env_str("TRAINING_POD_ANNOTATIONS", "{}")

# --- auth, REST, OpenAPI --------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# --- login throttling, token-failure limit, security headers ---------------------------------
# django-axes: after AXES_FAILURE_LIMIT failed logins for one username from one address, that pair
# is locked out (429) for AXES_COOLOFF_TIME; a successful login resets the count.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("AXES_COOLOFF_HOURS", 0.25, minimum=0.0)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# Failed bearer-token authentications per client address and window (instantstart.api.throttle).
TOKEN_AUTH_FAILURE_LIMIT = env_int("TOKEN_AUTH_FAILURE_LIMIT", 30, minimum=1)
TOKEN_AUTH_FAILURE_WINDOW = env_int("TOKEN_AUTH_FAILURE_WINDOW", 60, minimum=1)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # Shared by every web process in production; one process's memory elsewhere.
    "throttle": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if MODE == "production" and REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CONTENT_TYPE_NOSNIFF = True

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "instantstart.tenancy.authentication.BearerTokenAuthentication",
        "instantstart.tenancy.authentication.TeamSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["instantstart.tenancy.permissions.TeamRolePermission"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "instantstart.api.errors.exception_handler",
    # instantstart/api: the generic input limits every viewset gets (README, Architecture).
    "DEFAULT_PAGINATION_CLASS": "instantstart.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_PARSER_CLASSES": ["instantstart.api.parsers.JSONObjectParser"],
    "DEFAULT_METADATA_CLASS": "instantstart.api.metadata.ApiMetadata",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "InstantStart API",
    "DESCRIPTION": "Teams' REST API: clusters, operations, audit. Authenticate with "
    "`Authorization: Bearer <team token>`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from the installed sidecar package: no assets from the internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    # Operations and their phases share one set of statuses: name it, rather than a hash
    # (`check --deploy` reports an unnamed collision).
    "ENUM_NAME_OVERRIDES": {
        "OperationStatusEnum": "instantstart.operations.models.OperationStatus",
        "RegionEnum": "instantstart.api.schema.REGIONS",
        "JobStatusEnum": "training.models.JobStatus",
        "StorageKindEnum": "clusters.models.StorageKind",
        "ClusterStorageEnum": "clusters.models.StorageChoice",
        "DownloadKindEnum": "inference.models.DownloadKind",
        "FeatureKindEnum": [("feature", "feature"), ("dependency", "dependency")],
        "JobKindEnum": "training.models.JobKind",
    },
    "SERVE_AUTHENTICATION": [],
    # Every operation documents its error answers in the one error shape (instantstart.api.schema).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "instantstart.api.schema.add_error_responses",
    ],
}

# --- MCP ------------------------------------------------------------------------------------
MCP_READ_ONLY = env_bool("MCP_READ_ONLY", False)
# How often wait_for_operation checks its operation's row while it waits (seconds).
MCP_WAIT_POLL_SECONDS = env_float("MCP_WAIT_POLL_SECONDS", 0.5, minimum=0.01)

# --- i18n, static ---------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "/static/"
# `collectstatic` target in production; elsewhere WhiteNoise serves from the finders.
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles"))) if MODE == "production" else None
STATICFILES_DIRS = [BASE_DIR / "instantstart" / "static"]
# Without `collectstatic` (standalone, tests) WhiteNoise serves straight from the finders.
WHITENOISE_USE_FINDERS = MODE != "production"
WHITENOISE_AUTOREFRESH = MODE == "standalone"

# --- production: HTTPS, behind a TLS-terminating proxy --------------------------------------
SESSION_COOKIE_SECURE = MODE == "production"
CSRF_COOKIE_SECURE = MODE == "production"
if MODE == "production":
    # The proxy terminates TLS and says so in X-Forwarded-Proto. The app's port must be reachable
    # only through that proxy (compose publishes only the proxy; the stack listens on loopback).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Off only where the transport is encrypted without TLS at the app's proxy: the stack's SSM
    # port-forwarding session ends on the instance's loopback, where nothing is in the clear.
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Probes ask over plain HTTP from the host itself; a redirect would read as "unhealthy".
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    # Browsers keep HTTPS-only for a year; the header is sent only on HTTPS responses.
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"botocore": {"level": "WARNING"}, "urllib3": {"level": "WARNING"}},
}
