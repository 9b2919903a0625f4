"""The Starlette app of bench/asgi_bare's "starlette" row: the FastAPI row's
route as a plain Route answering JSONResponse, its state from a lifespan that
yields it. bench/interpreter also times it with no server around it
(bench/lib/python_kernels.py)."""
import contextlib

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


@contextlib.asynccontextmanager
async def lifespan(app):
    yield {"prices": {i: i / 10 for i in range(100)}}


async def read_item(request):
    item_id = request.path_params["item_id"]
    return JSONResponse({"item_id": item_id, "name": f"item {item_id}",
                         "price": request.state.prices.get(item_id, 0.0), "q": request.query_params.get("q")})


app = Starlette(routes=[Route("/items/{item_id:int}", read_item)], lifespan=lifespan)
