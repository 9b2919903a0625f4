"""Settings of the m0 Django example: cookie-based CSRF and sessions (signed
cookies), static files served by m0 itself (frontend.static in
configs/django.yaml). The shop pages (/shop/) read a database: SQLite by
default (DJANGO_SQLITE names the file), PostgreSQL with DJANGO_DB=postgresql
and libpq's PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE; either way a
connection is kept open per thread (CONN_MAX_AGE) through WSGI, not through
ASGI (below), and `manage.py migrate` makes and fills the tables."""
import importlib.util
import os
import sys
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

# Through WSGI, persistent connections: one per thread that serves requests,
# open for as long as the process lives (checked before reuse), as a
# deployment runs.
#
# Through ASGI (these settings are loaded while mysite/asgi.py makes its
# application), not: Django runs each request's sync code, the async ORM's
# queries included, on a thread made for that request (asgiref's
# ThreadSensitiveContext), and a connection belongs to its thread. A
# persistent connection is then never reused: every request opens one, left
# open until its thread's objects are collected (under wrk, PostgreSQL's 100
# connections ran out within seconds). Django's docs say to turn persistent
# connections off under ASGI and to use a pool: on PostgreSQL psycopg's
# (Django 5.1's OPTIONS "pool", its default size: 4 connections a process)
# when psycopg_pool is installed, else a connection per request.
THROUGH_ASGI = "mysite.asgi" in sys.modules
if os.environ.get("DJANGO_DB", "sqlite") == "postgresql":
    POOLED = THROUGH_ASGI and importlib.util.find_spec("psycopg_pool") is not None
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("PGDATABASE", "m0example"),
        "USER": os.environ.get("PGUSER", ""),
        "PASSWORD": os.environ.get("PGPASSWORD", ""),
        "HOST": os.environ.get("PGHOST", ""),
        "PORT": os.environ.get("PGPORT", ""),
        "CONN_MAX_AGE": 0 if THROUGH_ASGI else None,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"pool": True} if POOLED else {},
    }}
else:
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DJANGO_SQLITE", str(BASE_DIR / "db.sqlite3")),
        "CONN_MAX_AGE": 0 if THROUGH_ASGI else None,
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
