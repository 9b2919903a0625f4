"""A one-file Django project on PostgreSQL (the server of
examples/django/temp_postgres.py, named by PGHOST and PGDATABASE) with
persistent connections, one per thread (CONN_MAX_AGE: None), for the
pool's growth tests.

/together/<n>: counts itself in, then waits in `SELECT pg_sleep(0.02)` on its
connection until n requests are inside at once; answers "together", or
"alone" after 30 s. /stuck: a query that never ends."""
import os
import threading
import time

from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="growth-test",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ["PGHOST"],
            "USER": os.environ.get("PGUSER", "postgres"),
            "NAME": os.environ["PGDATABASE"],
            "CONN_MAX_AGE": None,
        }
    },
)

import django  # noqa: E402

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

_lock = threading.Lock()
_arrived = 0


def together(request, n):
    global _arrived
    with _lock:
        _arrived += 1
    deadline = time.monotonic() + 30
    with connection.cursor() as cursor:
        while _arrived < n and time.monotonic() < deadline:
            cursor.execute("SELECT pg_sleep(0.02)")
    return HttpResponse("together" if _arrived >= n else "alone")


def stuck(request):
    """A query that hangs: its thread is written off at the request deadline
    and keeps its connection while the query runs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_sleep(600)")
    return HttpResponse("never")


urlpatterns = [path("together/<int:n>", together), path("stuck", stuck)]
application = get_wsgi_application()
