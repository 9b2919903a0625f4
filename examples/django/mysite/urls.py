from django.urls import path

from chat import views as chat
from notes import views
from shop import views as shop

urlpatterns = [
    path("", views.index, name="index"),
    path("api/notes", views.api_notes, name="api-notes"),
    path("api/notes-async", views.api_notes_async, name="api-notes-async"),
    path("form", views.form, name="form"),
    path("boom", views.boom, name="boom"),
    # The database-backed shop (SQLite by default, PostgreSQL: see settings).
    path("shop/", shop.page, name="shop"),
    path("shop/api/products", shop.products, name="shop-products"),
    path("shop/api/products-async", shop.products_async, name="shop-products-async"),
    # The chat room (configs/django-realtime.yaml: needs m0's `realtime:`).
    path("chat/", chat.page, name="chat"),
    path("chat/events", chat.events, name="chat-events"),
    path("chat/ws", chat.websocket, name="chat-ws"),
    path("chat/say", chat.say, name="chat-say"),
]
