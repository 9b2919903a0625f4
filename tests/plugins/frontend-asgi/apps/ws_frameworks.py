"""WebSocket endpoints as users write them: a Starlette WebSocketRoute and a
FastAPI websocket endpoint (path and query parameters, a dependency,
WebSocketDisconnect)."""
from fastapi import Depends, FastAPI, WebSocket, WebSocketDisconnect
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket as StarletteWebSocket


async def starlette_chat(websocket: StarletteWebSocket):
    await websocket.accept(subprotocol="chat" if "chat" in websocket.scope["subprotocols"] else None,
                           headers=[(b"x-framework", b"starlette")])
    try:
        async for data in websocket.iter_json():
            if data.get("bye"):
                await websocket.close(code=4100, reason="bye from starlette")
                print("starlette: closed by the app", flush=True)
                return
            await websocket.send_json({"echo": data, "path": websocket.url.path})
    finally:
        print(f"starlette: done, client state {websocket.client_state.name}", flush=True)


starlette_app = Starlette(routes=[WebSocketRoute("/chat", starlette_chat)])


fastapi_app = FastAPI()


def room_prefix(prefix: str = "room"):
    return prefix


@fastapi_app.websocket("/rooms/{room_id}")
async def room(websocket: WebSocket, room_id: int, prefix: str = Depends(room_prefix)):
    await websocket.accept()
    try:
        while True:
            text = await websocket.receive_text()
            await websocket.send_text(f"{prefix}-{room_id}: {text}")
            data = await websocket.receive_bytes()
            await websocket.send_bytes(data[::-1])
    except WebSocketDisconnect as gone:
        print(f"fastapi: WebSocketDisconnect code={gone.code}", flush=True)


@fastapi_app.websocket("/private")
async def private(websocket: WebSocket):
    # Refused before accepting: Starlette sends websocket.close (m0 answers 403).
    await websocket.close(code=1008)
