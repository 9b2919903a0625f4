"""ASGI entry point: `frontend.type: asgi`, `frontend.app: "mysite.asgi:application"`
(configs/django-asgi.yaml). Async views run on m0's event loop; sync views
run in asgiref's thread pool. The settings, loaded from here, keep no
database connection across requests (why: the comment on DATABASES)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")

application = get_asgi_application()
