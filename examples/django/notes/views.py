"""Five views: a template page, a JSON API (also as an async view, served
through ASGI), a CSRF-protected form, and an error (to show the 500 path)."""
import asyncio
import html

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render

NOTES = [
    {"id": 1, "title": "m0 serves Django", "body": "on embedded CPython"},
    {"id": 2, "title": "static files", "body": "are sent by the reactor with sendfile"},
]


def index(request):
    return render(request, "notes/index.html", {"notes": NOTES})


def api_notes(request):
    return JsonResponse({"notes": NOTES, "count": len(NOTES)})


async def api_notes_async(request):
    await asyncio.sleep(0)  # a coroutine view: awaits on the event loop
    return JsonResponse({"notes": NOTES, "count": len(NOTES), "async": True})


def form(request):
    if request.method == "POST":
        text = request.POST.get("text", "")
        return HttpResponse(f"<p>Thanks, you wrote: {html.escape(text)}</p>")
    return render(request, "notes/form.html")


def boom(request):
    raise RuntimeError("the example's deliberate error")
