"""Django settings for tmsite.

Every setting a deployment changes is read from the environment (``TM_*``), so the embedded
default needs none and the many-machine setup sets a few. The README lists them all.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
import django_stubs_ext

# Lets admin and model classes be subscripted for the type checker at run time.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TM_VAR_DIR", BASE_DIR / "var"))


#: A file in ``var/`` each process of the box holds a shared lock on while it lives: who uses
#: that ``var/`` (and so may write it) is seen in ``/proc/locks`` (``tests/own_var.py`` reads it).
VAR_IN_USE = "in-use.lock"


def _hold_var_dir(var_dir: Path) -> int | None:
    """Hold a shared lock on ``var/in-use.lock`` while this process lives (never creates var/)."""
    if not var_dir.is_dir():
        return None
    try:
        fd = os.open(var_dir / VAR_IN_USE, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _secret_key() -> str:
    """The signing key: ``TM_SECRET_KEY``, else one made once and kept in ``var/``.

    Cursors are signed with it, so every worker of one box must share it; a file in ``var/``
    is shared by the workers of one machine, and the many-machine setup sets the variable.
    """
    if key := os.environ.get("TM_SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(48)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
        return key
    except OSError:
        return secrets.token_urlsafe(48)


SECRET_KEY = _secret_key()
_VAR_DIR_HELD = _hold_var_dir(VAR_DIR)
DEBUG = os.environ.get("TM_DEBUG", "") == "1"
#: The site's own name is served too: the http mount fetches its pages with that Host.
ALLOWED_HOSTS = _env_list(
    "TM_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver,tinymachines.ai"
)

INSTALLED_APPS = [
    "tmsite.apps.TmAdminConfig",  # django.contrib.admin, on the box's site (tmsite.admin_site)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_otp",
    "tmsite.apps.OtpTotpConfig",  # django_otp.plugins.otp_totp, its heading named
    "ninja",
    "tmsite.apps.TmsiteConfig",
    "tmsite.entities.apps.EntitiesConfig",
    "tmsite.kinds.apps.KindsConfig",
    "tmsite.servers.apps.ServersConfig",
    "tmsite.trails.apps.TrailsConfig",
    "tmsite.proposals.apps.ProposalsConfig",
    "tmsite.site.apps.SiteConfig",
    "tmsite.oplog.apps.OplogConfig",
    "tmsite.subscriptions.apps.SubscriptionsConfig",
    "tmsite.search.apps.SearchConfig",
]

MIDDLEWARE = [
    # X-Forwarded-Proto from a trusted proxy only, before the redirect to https (TM_TLS)
    "tmsite.callers.tls.ForwardedProtoMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tmsite.urls"
WSGI_APPLICATION = "tmsite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


#: The database URL schemes the box runs on.
DATABASE_SCHEMES = ("postgres", "postgresql", "pgsql", "sqlite")
#: What stands in for a database URL that cannot be used: every query fails, nothing is
#: written to a database the URL did not name, and the start-up check ``tm.E002`` says why.
_NO_DATABASE: dict[str, object] = {"ENGINE": "django.db.backends.dummy"}


def database_from_url(url: str) -> dict[str, object]:
    """The Django database settings a ``TM_DATABASE_URL`` names, query options kept.

    The URL is parsed by ``dj-database-url``: ``?sslmode=require&connect_timeout=5`` become
    ``OPTIONS`` (digits as integers) handed to the driver as they are. PostgreSQL connections
    are kept for 60 seconds; SQLite waits 20 seconds for a lock unless the URL says otherwise.

    Raises:
        ValueError: the URL does not parse, has a scheme the box does not run on, or names no
            database; the message says which, and never repeats the URL (it may hold a
            password).
    """
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise ValueError("it is not a URL: it must start with postgres:// or sqlite://")
    if scheme.lower() not in DATABASE_SCHEMES:
        raise ValueError(
            f"its scheme {scheme[:20]!r} is not one the box runs on (postgres:// or sqlite://)"
        )
    try:
        config: dict[str, object] = dict(dj_database_url.parse(url))
    except ValueError:
        raise ValueError(f"it does not parse as a URL ({_url_fault(url)})") from None
    config["PORT"] = str(config.get("PORT") or "")
    options = config.setdefault("OPTIONS", {})
    assert isinstance(options, dict)
    if scheme.lower() != "sqlite":
        if not config.get("NAME"):
            raise ValueError("it names no database (the path after the host, e.g. /tmsite)")
        config["CONN_MAX_AGE"] = 60
    elif config.get("NAME") in ("", ":memory:"):
        raise ValueError("it names no SQLite file (an in-memory database is not shared)")
    else:
        options.setdefault("timeout", 20)
        options.setdefault("transaction_mode", "IMMEDIATE")  # see _database
    if not options:
        del config["OPTIONS"]
    return config


def _url_fault(url: str) -> str:
    """Which part of a database URL does not parse, without repeating any of it.

    Not even the port: an unencoded ``/`` in a password ends the host there, and what follows
    the user name is then read as the port.
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return str(exc)  # "Invalid IPv6 URL": urlsplit's own messages quote nothing
    try:
        parts.port  # noqa: B018  (reading it is the test)
    except ValueError:
        return "what stands as its port is not a number from 0 to 65535"
    return "a part of it is not percent-encoded"


def _database() -> tuple[dict[str, object], str]:
    """``TM_DATABASE_URL``, else SQLite in ``var/``; and why the URL cannot be used, or ``""``."""
    url = os.environ.get("TM_DATABASE_URL", "").strip()
    if not url:
        sqlite: dict[str, object] = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "tmsite.sqlite3",
            # Write-ahead logging: a commit appends to the log, without a journal file made,
            # synced and removed each time (the request log writes a batch every few hundred
            # requests), and readers never wait for a writer. NORMAL syncs at checkpoints: a
            # process that dies loses nothing committed; a power cut may lose the last commits.
            # A transaction takes the write lock as it begins (IMMEDIATE), waiting up to the
            # timeout: a deferred one that read first is refused at once ("database is locked")
            # when another process wrote since, and every transaction here writes.
            "OPTIONS": {
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
            },
        }
        return sqlite, ""
    try:
        return database_from_url(url), ""
    except ValueError as exc:
        return dict(_NO_DATABASE), str(exc)


_DEFAULT_DATABASE, TM_DATABASE_URL_PROBLEM = _database()
DATABASES = {"default": _DEFAULT_DATABASE}


TM_REDIS_URL = os.environ.get("TM_REDIS_URL", "")
TM_REDIS_TIMEOUT = float(os.environ.get("TM_REDIS_TIMEOUT", "0.05"))
TM_CACHE_PREFIX = os.environ.get("TM_CACHE_PREFIX", "")


def _cache() -> dict[str, object]:
    """``TM_REDIS_URL`` for the many-machine setup, else this process's memory.

    ``TM_CACHE_PREFIX`` starts every key the box writes in Redis, so boxes (or test runs) can
    share one Redis without sharing buckets or cached reads. ``TM_REDIS_TIMEOUT`` bounds each
    connect and each read of a Redis socket (seconds): a Redis that is gone or frozen costs a
    request that much, once, before the circuit of ``tmsite.core.sharedcache`` stops asking it.
    """
    if TM_REDIS_URL:
        from redis.backoff import NoBackoff
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.retry import Retry

        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": TM_REDIS_URL,
            "KEY_PREFIX": TM_CACHE_PREFIX,
            "OPTIONS": {
                "socket_connect_timeout": TM_REDIS_TIMEOUT,
                "socket_timeout": TM_REDIS_TIMEOUT,
                # A pooled connection Redis closed (it restarted) is retried once on a new
                # one; a timeout is not retried (tmsite.core.sharedcache opens its circuit).
                "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            },
        }
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tmsite"}


CACHES = {"default": _cache()}
#: Seconds the shared cache is not asked after it failed, before one call tries it again.
TM_REDIS_RETRY_SECONDS = float(os.environ.get("TM_REDIS_RETRY_SECONDS", "1"))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024

# --- the admin's door (tmsite.admin_site, tmsite.oplog.logins) ----------------------------------


#: Where the admin is served (``/admin/`` unless set): every link to it is reversed. A URL
#: pattern: no leading slash, one trailing.
TM_ADMIN_PATH = (os.environ.get("TM_ADMIN_PATH", "admin/").strip().strip("/") or "admin") + "/"
#: A second factor for staff: a TOTP token from a device enrolled in the admin (django-otp).
TM_ADMIN_OTP = os.environ.get("TM_ADMIN_OTP", "0") == "1"
#: Failed logins an account may have, and a caller across accounts, before a lock-out; the
#: seconds failures are counted over and a lock-out lasts.
TM_LOGIN_FAILURES = int(os.environ.get("TM_LOGIN_FAILURES", "5"))
TM_LOGIN_CALLER_FAILURES = int(os.environ.get("TM_LOGIN_CALLER_FAILURES", "20"))
TM_LOGIN_COOLOFF = float(os.environ.get("TM_LOGIN_COOLOFF", "900"))
#: Days the logins and lock-outs are kept.
TM_LOGIN_RETENTION_DAYS = int(os.environ.get("TM_LOGIN_RETENTION_DAYS", "30"))
#: A staff session ends this many seconds after login, and when the browser closes unless
#: ``TM_SESSION_BROWSER_CLOSE=0``.
SESSION_COOKIE_AGE = int(os.environ.get("TM_SESSION_SECONDS", str(8 * 3600)))
SESSION_EXPIRE_AT_BROWSER_CLOSE = os.environ.get("TM_SESSION_BROWSER_CLOSE", "1") != "0"
#: Passwords set through the admin (or ``changepassword``) are checked by Django's validators.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": int(os.environ.get("TM_PASSWORD_MIN_LENGTH", "12"))},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "tmsite.oplog.logs.JsonFormatter"}},
    "filters": {
        # A Host not served is refused (400) on every request that names one; its log line is
        # written at most once a minute, without Django's traceback: a client cannot flood it.
        "host_refusals": {
            "()": "tmsite.oplog.logs.OneLineEvery",
            "seconds": float(os.environ.get("TM_LOG_HOST_REFUSALS_EVERY", "60")),
        }
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler"},
        # formatted and written by a writer thread: a request only queues its record
        "json": {"class": "tmsite.oplog.logs.BackgroundStreamHandler", "formatter": "json"},
    },
    "root": {"handlers": ["stderr"], "level": os.environ.get("TM_LOG_LEVEL", "WARNING")},
    # One JSON line per request (tmsite.oplog): what was asked, how it ended, how long it took.
    "loggers": {
        "tmsite.requests": {
            "handlers": ["json"],
            "level": "INFO" if os.environ.get("TM_LOG_JSON", "1") == "1" else "WARNING",
            "propagate": False,
        },
        "django.security.DisallowedHost": {"filters": ["host_refusals"]},
    },
}

# --- tmsite ---------------------------------------------------------------------------------

#: The one host this server answers under ``tm://``.
TM_HOST = os.environ.get("TM_HOST", "tinymachines")
#: The checkout whose files, repository and pages the box serves (by default this one).
TM_CHECKOUT = Path(os.environ.get("TM_CHECKOUT", BASE_DIR)).resolve()
#: The allow-listed top directories of the checkout that the fs mount offers.
TM_FS_ROOTS = _env_list("TM_FS_ROOTS", "docs,data,notes")
#: The deny-list (tmsite.core.paths): name patterns, ``default`` for the defaults, ``!`` to
#: name one back; hidden names are listed redacted and refused ``denied`` in fs and git.
TM_DENY = _env_list("TM_DENY", "default")
#: Origins besides loopback that may call the endpoint from a browser.
TM_ALLOWED_ORIGINS = _env_list("TM_ALLOWED_ORIGINS", "")
#: The pieces record the tools answer from.
TM_PIECES_FILE = Path(os.environ.get("TM_PIECES_FILE", TM_CHECKOUT / "data" / "pieces.json"))
#: Seconds a probe of a piece's public URL may take, and how long its answer is kept.
TM_PROBE_TIMEOUT = float(os.environ.get("TM_PROBE_TIMEOUT", "4.0"))
TM_PROBE_CACHE_SECONDS = float(os.environ.get("TM_PROBE_CACHE_SECONDS", "30"))
#: Seconds between polls of the git refs, of the records' stamps, of the http pages no file
#: makes and of the resources/list answer, while they are listened to.
TM_SUB_GIT_POLL = float(os.environ.get("TM_SUB_GIT_POLL", "0.5"))
TM_SUB_RECORDS_POLL = float(os.environ.get("TM_SUB_RECORDS_POLL", "1.0"))
TM_SUB_HTTP_POLL = float(os.environ.get("TM_SUB_HTTP_POLL", "5.0"))
TM_SUB_LIST_POLL = float(os.environ.get("TM_SUB_LIST_POLL", "10.0"))
# the search index's keeper: rounds, and the full walk that catches a change no source told
TM_SEARCH_POLL = float(os.environ.get("TM_SEARCH_POLL", "1.0"))
TM_SEARCH_FULL_EVERY = float(os.environ.get("TM_SEARCH_FULL_EVERY", "600"))
#: The change bus (tmsite.bus.changes): ``redis`` (the default with TM_REDIS_URL)
#: carries changes between processes and machines; ``local`` keeps them in each process.
TM_SUB_BUS = os.environ.get("TM_SUB_BUS", "").strip() or ("redis" if TM_REDIS_URL else "local")
#: Seconds between two pings of the bus's Redis connection (three unanswered: Redis is gone),
#: and within which the same change from another process is dropped.
TM_SUB_BUS_HEARTBEAT = float(os.environ.get("TM_SUB_BUS_HEARTBEAT", "1.0"))
TM_SUB_BUS_COALESCE = float(os.environ.get("TM_SUB_BUS_COALESCE", "0.25"))

# --- operating the box (tmsite.oplog) -------------------------------------------------------

#: The per-caller rate limit: on unless ``TM_RATE_LIMIT=0``.
TM_RATE_LIMIT = os.environ.get("TM_RATE_LIMIT", "1") != "0"
#: Tokens a caller may spend at once, and tokens refilled per second after that.
TM_RATE_BURST = float(os.environ.get("TM_RATE_BURST", "120"))
TM_RATE_REFILL = float(os.environ.get("TM_RATE_REFILL", "2"))
#: Where buckets live: ``auto`` (Redis when the cache is Redis, else a locked file in var/),
#: ``redis``, ``file`` or ``memory`` (this process only).
TM_RATE_STORE = os.environ.get("TM_RATE_STORE", "auto")
TM_RATE_FILE = Path(os.environ.get("TM_RATE_FILE", VAR_DIR / "ratelimit.buckets"))
#: Proxies whose X-Forwarded-For names the caller (nginx on this machine by default).
TM_RATE_TRUSTED_PROXIES = _env_list("TM_RATE_TRUSTED_PROXIES", "127.0.0.1,::1")
#: Callers never limited: the box's own loopback calls that no proxy forwarded.
TM_RATE_EXEMPT = _env_list("TM_RATE_EXEMPT", "127.0.0.1,::1")
#: Addresses or networks (CIDR) besides loopback that may read /metrics; others get 404.
TM_METRICS_ALLOWED = _env_list("TM_METRICS_ALLOWED", "")

#: The request log: one row per request, kept this many days.
TM_LOG_REQUESTS = os.environ.get("TM_LOG_REQUESTS", "1") != "0"
TM_LOG_RETENTION_DAYS = int(os.environ.get("TM_LOG_RETENTION_DAYS", "30"))
#: Rows are written in batches: every this many rows, or when the oldest waited this long.
TM_LOG_FLUSH_ROWS = int(os.environ.get("TM_LOG_FLUSH_ROWS", "50"))
TM_LOG_FLUSH_SECONDS = float(os.environ.get("TM_LOG_FLUSH_SECONDS", "5"))

# --- proposals (tmsite.proposals) ---
#: Proposals one caller may make a UTC day; open proposals the queue holds at most, and the
#: ``retryAfter`` a full queue answers with; days an open proposal waits before it expires,
#: and days an expired one is kept after (then deleted: its receipt reads not-found); the most
#: steps a proposed trail may have.
TM_PROPOSALS_PER_CALLER = int(os.environ.get("TM_PROPOSALS_PER_CALLER", "20"))
TM_PROPOSALS_OPEN_MAX = int(os.environ.get("TM_PROPOSALS_OPEN_MAX", "500"))
TM_PROPOSALS_RETRY_AFTER = int(os.environ.get("TM_PROPOSALS_RETRY_AFTER", "3600"))
TM_PROPOSALS_EXPIRE_DAYS = float(os.environ.get("TM_PROPOSALS_EXPIRE_DAYS", "30"))
TM_PROPOSALS_EXPIRED_KEEP_DAYS = float(os.environ.get("TM_PROPOSALS_EXPIRED_KEEP_DAYS", "30"))
TM_PROPOSALS_MAX_STEPS = int(os.environ.get("TM_PROPOSALS_MAX_STEPS", "20"))

# --- the git mount ---
#: The name of the checkout's own repository under ``git/``.
TM_CHECKOUT_REPO = os.environ.get("TM_CHECKOUT_REPO", "tmsite")


def _env_pairs(name: str) -> dict[str, str]:
    """``name=value,…`` from the environment."""
    pairs = (item.partition("=") for item in _env_list(name, ""))
    return {key.strip(): value.strip() for key, _, value in pairs if value}


#: Neighbouring repositories served beside the checkout's own: ``name=/path,…``.
TM_GIT_REPOS = {name: Path(path) for name, path in _env_pairs("TM_GIT_REPOS").items()}
#: A pinned default ref per repository (the commit the site serves): ``name=ref,…``.
TM_GIT_DEFAULT_REFS = _env_pairs("TM_GIT_DEFAULT_REFS")
#: Bytes the heavy git answers (blames, history walks, deep trees) may take in
#: ``var/git-kept/`` when there is no Redis (``tmsite.gitstore.kept``).
TM_GIT_KEPT_BYTES = int(os.environ.get("TM_GIT_KEPT_BYTES", str(512 * 1024 * 1024)))
#: The import manifest: which neighbouring file each imported doc came from.
TM_IMPORTS_FILE = Path(os.environ.get("TM_IMPORTS_FILE", TM_CHECKOUT / "data" / "imports.json"))

# --- the site and the http mount ---
#: The name the site answers to (the Host of its pages).
TM_SITE_HOST = os.environ.get("TM_SITE_HOST", "tinymachines.ai")
#: Where pages are fetched from, as a visitor would: a loopback address (nginx, or this server).
TM_FRONT_DOOR = os.environ.get("TM_FRONT_DOOR", "http://127.0.0.1:8000")
#: The box's public front door: the origin clients and visitors reach it at, which
#: ``serverInfo`` gives as ``websiteUrl`` and its icons' URLs are on (by default the loopback
#: door, which is the public one on the embedded default).
TM_PUBLIC_URL = os.environ.get("TM_PUBLIC_URL", TM_FRONT_DOOR).rstrip("/")
#: Served over TLS: the public front door is an https URL. That one fact turns on what
#: ``manage.py check --deploy`` asks of a site served over TLS only: the redirect of plain http
#: to https, HSTS (a year, subdomains, preload), Secure session and CSRF cookies, and
#: ``X-Forwarded-Proto`` believed from ``TM_RATE_TRUSTED_PROXIES`` alone (tmsite.callers.tls).
#: The box's own loopback reads (the http mount at ``TM_FRONT_DOOR``) are never redirected.
TM_TLS = urlsplit(TM_PUBLIC_URL).scheme.lower() == "https"
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if TM_TLS else None
SECURE_SSL_REDIRECT = TM_TLS
SECURE_HSTS_SECONDS = 365 * 24 * 3600 if TM_TLS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = TM_TLS
SECURE_HSTS_PRELOAD = TM_TLS
SESSION_COOKIE_SECURE = TM_TLS
CSRF_COOKIE_SECURE = TM_TLS
#: The sites the http mount reads: this project's own, and a static site it serves as built.
TM_SITES: dict[str, dict[str, str]] = {
    TM_SITE_HOST: {"kind": "self"},
    "demo.tinymachines.ai": {
        "kind": "static",
        "front_door": os.environ.get("TM_DEMO_FRONT_DOOR", "http://127.0.0.1:8001"),
    },
}
#: Seconds a page fetch may take in all, and the most bytes it may bring.
TM_HTTP_DEADLINE = float(os.environ.get("TM_HTTP_DEADLINE", "10"))
TM_HTTP_BODY_CAP = int(os.environ.get("TM_HTTP_BODY_CAP", str(4 * 1024 * 1024)))
#: The programs stdio MCP servers may run: a JSON (or .toml) file of named launch specs the
#: operator keeps (``manage.py tm_servers add --stdio`` writes it); empty: the demo server only.
TM_STDIO_PROGRAMS = os.environ.get("TM_STDIO_PROGRAMS", "")
#: Hosts (``host`` or ``host:port``) an HTTP MCP peer may be at though they are not public
#: (on loopback, plain http too); every other peer is https to public addresses only. The
#: embedded default (no ``TM_DATABASE_URL``: one machine, its own SQLite) allows loopback, so a
#: peer started beside ``make run`` is read; a deployment names its own, or none.
TM_MCP_ALLOWED_HOSTS = _env_list(
    "TM_MCP_ALLOWED_HOSTS",
    "" if os.environ.get("TM_DATABASE_URL", "").strip() else "127.0.0.1,localhost,[::1]",
)
