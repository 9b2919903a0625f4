"""Settings of the m0 Django example: cookie-based CSRF and sessions (signed
cookies), static files served by m0 itself (frontend.static in
configs/django.yaml). The shop pages (/shop/) read a database: SQLite by
default (DJANGO_SQLITE names the file), PostgreSQL with DJANGO_DB=postgresql
and libpq's PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE; either way a
connection is kept open per thread (CONN_MAX_AGE), and `manage.py migrate`
makes and fills the tables."""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# An example key for a local demo; a deployment sets DJANGO_SECRET_KEY.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "m0-example-not-a-secret-0123456789abcdef")
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.staticfiles",
    "notes",
    "chat",
    "shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]

ROOT_URLCONF = "mysite.urls"
WSGI_APPLICATION = "mysite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    },
]

# Persistent connections: one per thread that serves requests, open for as
# long as the process lives (checked before reuse), as a deployment runs.
if os.environ.get("DJANGO_DB", "sqlite") == "postgresql":
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "m0example"),
        "USER": os.environ.get("PGUSER", ""),
        "PASSWORD": os.environ.get("PGPASSWORD", ""),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "CONN_MAX_AGE": None,
        "CONN_HEALTH_CHECKS": True,
    }}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DJANGO_SQLITE", str(BASE_DIR / "db.sqlite3")),
        "CONN_MAX_AGE": None,
    }}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The session lives in a signed cookie: no session table.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "notes" / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["stderr"], "level": "ERROR"}},
}
