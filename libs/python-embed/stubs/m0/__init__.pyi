# Type stubs of the `m0` module built into m0's interpreter.
def publish(channel: str, data: str | bytes, *, event: str | None = None) -> None:
    """Send `data` to every connection held on `channel` (an SSE event named
    `event` when given), in this process or, with a Redis bus, in every
    process on that Redis. Any thread; never blocks on a slow client nor on
    Redis (a publish while Redis is unreachable is dropped and counted).
    Raises RuntimeError without a `realtime:` section, ValueError for an
    event name with CR or LF."""
