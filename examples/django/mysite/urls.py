from django.urls import path

from notes import views

urlpatterns = [
    path("", views.index, name="index"),
    path("api/notes", views.api_notes, name="api-notes"),
    path("api/notes-async", views.api_notes_async, name="api-notes-async"),
    path("form", views.form, name="form"),
    path("boom", views.boom, name="boom"),
]
