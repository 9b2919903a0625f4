"""A Starlette application: routes, a JSON body, a streamed response and a
lifespan that puts a resource in the request state."""
import contextlib

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route


@contextlib.asynccontextmanager
async def lifespan(app):
    yield {"greeting": "hello from lifespan"}
    print("starlette lifespan closed", flush=True)


async def home(request: Request):
    return PlainTextResponse(request.state.greeting)


async def items(request: Request):
    data = await request.json()
    return JSONResponse({"id": request.path_params["item_id"], "got": data, "q": request.query_params.get("q")})


async def numbers(request: Request):
    async def gen():
        for i in range(100):
            yield f"{i}\n"
    return StreamingResponse(gen(), media_type="text/plain")


app = Starlette(routes=[
    Route("/", home),
    Route("/items/{item_id:int}", items, methods=["POST"]),
    Route("/numbers", numbers),
], lifespan=lifespan)
