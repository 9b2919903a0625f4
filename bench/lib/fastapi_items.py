"""The FastAPI app of bench/asgi_bare's "fastapi" row: a JSON route taking a
path and a query parameter and answering a pydantic response model, its state
from a lifespan that yields it (so every event loop sets up its own).
bench/interpreter also times it with no server around it
(bench/lib/python_kernels.py)."""
import contextlib

from fastapi import FastAPI, Request
from pydantic import BaseModel


class Item(BaseModel):
    item_id: int
    name: str
    price: float
    q: str | None = None


@contextlib.asynccontextmanager
async def lifespan(app):
    yield {"prices": {i: i / 10 for i in range(100)}}


app = FastAPI(lifespan=lifespan)


@app.get("/items/{item_id}", response_model=Item)
async def read_item(item_id: int, request: Request, q: str | None = None):
    return Item(item_id=item_id, name=f"item {item_id}", price=request.state.prices.get(item_id, 0.0), q=q)
