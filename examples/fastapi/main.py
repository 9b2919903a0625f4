"""A small FastAPI service for m0's ASGI frontend: a resource opened by the
lifespan, JSON routes, a streamed response, a file upload and a background
task."""
import asyncio
import contextlib
import hashlib

from fastapi import BackgroundTasks, FastAPI, Request, UploadFile
from fastapi.responses import StreamingResponse
from pydantic import BaseModel


class NoteStore:
    """Stands in for a database pool: opened at startup, closed at shutdown."""

    def __init__(self):
        self.notes = []
        self.events = []
        self.open = False


@contextlib.asynccontextmanager
async def lifespan(app):
    store = NoteStore()
    store.open = True
    # Each of m0's event loops runs the lifespan once and gets its own store.
    yield {"store": store}
    store.open = False
    print("fastapi example: store closed", flush=True)


app = FastAPI(lifespan=lifespan)


class Note(BaseModel):
    text: str


@app.get("/")
async def index(request: Request):
    store = request.state.store
    return {"service": "notes", "store_open": store.open, "notes": len(store.notes)}


@app.post("/notes", status_code=201)
async def add_note(note: Note, request: Request, background: BackgroundTasks):
    store = request.state.store
    store.notes.append(note.text)
    # Runs after the response was sent.
    background.add_task(store.events.append, f"added {note.text}")
    return {"id": len(store.notes), "text": note.text}


@app.get("/notes")
async def list_notes(request: Request):
    return {"notes": request.state.store.notes}


@app.get("/events")
async def events(request: Request):
    return {"events": request.state.store.events}


@app.get("/count")
async def count(to: int = 10):
    async def numbers():
        for i in range(1, to + 1):
            yield f"{i}\n"
            await asyncio.sleep(0)
    return StreamingResponse(numbers(), media_type="text/plain")


@app.post("/upload")
async def upload(file: UploadFile):
    data = await file.read()
    return {"name": file.filename, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
