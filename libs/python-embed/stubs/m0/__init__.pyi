# Type stubs of the `m0` module built into m0's interpreter, and of what the
# realtime hold path hands a WSGI view (environ["m0.hold"], its `conn`).
from collections.abc import Callable, Iterable
from typing import Literal, Protocol, final

def publish(channel: str, data: str | bytes, *, event: str | None = None) -> None:
    """Send `data` to every connection held on `channel`, in this process or,
    with a Redis bus, in every process on that Redis: an SSE event named
    `event` when given, the body of a long-poll, a WebSocket message (str as
    a text frame, bytes as a binary one). Any thread; never blocks on a slow
    client nor on Redis (a publish while Redis is unreachable is dropped and
    counted). Raises RuntimeError without a `realtime:` section, ValueError
    for an event name with CR or LF."""

# The type of on_message's `conn` (its repr: <m0.connection id=...>); for
# annotations only, the module does not export it.
@final
class connection:
    """A WebSocket held with environ["m0.hold"](..., "ws", on_message=...),
    as on_message receives it. Every method works from any thread, never
    waits for the client, and does nothing once the connection ended."""

    @property
    def id(self) -> int:
        """Unique within the serving process."""
    def send(self, data: str | bytes | bytearray | memoryview) -> None:
        """To this connection alone (through its outbox, like a publish): str
        as a text message, bytes-like as a binary one."""
    def subscribe(self, channel: str) -> None:
        """Also receive what is published on `channel` from now on."""
    def unsubscribe(self, channel: str) -> None:
        """Stop receiving `channel`."""
    def close(self, code: int = 1000, reason: str = "") -> None:
        """Start the closing handshake. ValueError for a code a server may not
        send (allowed: 1000-1003, 1007-1014, 3000-4999) or a reason longer
        than 123 bytes as UTF-8."""

class Hold(Protocol):
    """environ["m0.hold"], present when the deployment has `realtime:`."""

    def __call__(
        self,
        channels: str | Iterable[str],
        mode: Literal["sse", "poll", "ws"] = "sse",
        *,
        on_message: Callable[[connection, str | bytes], object] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Hold this request's connection on `channels`; the view then returns
        as usual and m0 answers instead. `ws`: the request must be a WebSocket
        handshake (else ValueError, and the view may answer 400); each inbound
        message calls on_message(conn, message) on the executor, in order per
        connection (str for a text message, bytes for a binary one); an
        exception there is logged and closes the connection with 1011."""
