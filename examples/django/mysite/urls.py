from django.urls import path

from notes import views

urlpatterns = [
    path("", views.index, name="index"),
    path("api/notes", views.api_notes, name="api-notes"),
    path("form", views.form, name="form"),
    path("boom", views.boom, name="boom"),
]
