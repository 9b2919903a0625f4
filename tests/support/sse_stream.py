"""Reading a held Server-Sent Events response as it arrives (a raw socket:
the test decides when to read)."""
import m0test


class StreamReader(m0test.ResponseReader):
    """A held response read as it arrives: the head, then SSE events from
    the chunked body, then its end."""

    def head(self):
        status = int(self._read_line().decode("latin-1").split(" ", 2)[1])
        headers = []
        while True:
            line = self._read_line()
            if not line:
                return status, headers
            k, v = line.decode("latin-1").split(":", 1)
            headers.append((k.strip().lower(), v.strip()))

    def chunk(self):
        """The next chunk's bytes; b"" for the final chunk."""
        size = int(self._read_line().split(b";")[0], 16)
        if size == 0:
            assert self._read_line() == b""
            return b""
        data = self._read_exact(size)
        assert self._read_exact(2) == b"\r\n"
        return data

    def event(self):
        """The next SSE event as a dict of its fields (data lines joined), or
        None at the stream's end; heartbeat comments are skipped."""
        pending = getattr(self, "pending", b"")
        while True:
            while b"\n\n" not in pending:
                data = self.chunk()
                if not data:
                    assert pending == b"", pending
                    return None
                pending += data
            raw, pending = pending.split(b"\n\n", 1)
            self.pending = pending
            fields = {}
            for line in raw.decode().split("\n"):
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(": ")
                fields[name] = fields[name] + "\n" + value if name in fields else value
            if fields:
                return fields
