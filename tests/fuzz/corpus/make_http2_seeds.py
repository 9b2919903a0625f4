#!/usr/bin/env python3
"""Writes the seed corpus of http2_fuzz (tests/fuzz/corpus/http2_fuzz/).

Each seed is the target's input (see http2_fuzz.cpp): a control byte, a
timing byte, two HTTP/2 bytes, then the client's frames after the h2c preface
(the harness sends the preface). Header blocks are HPACK without Huffman
coding, so that paths and names stay visible to the fuzzer's mutations.

Needs the `hpack` and `hyperframe` packages (in a throwaway virtualenv:
`pip install hpack hyperframe`); run it from anywhere, it writes next to
itself. The seeds are committed; this script only documents and remakes them.
"""
import os

from hpack import Encoder
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    PriorityFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "http2_fuzz")


class Client:
    """One connection's frames, with its own HPACK state."""

    def __init__(self, settings=None):
        self.enc = Encoder()
        self.out = bytearray(SettingsFrame(0, settings=settings or {}).serialize())

    def block(self, method, path, extra=()):
        fields = [(":method", method), (":scheme", "http"), (":authority", "fuzz"), (":path", path)]
        return self.enc.encode(fields + list(extra), huffman=False)

    def headers(self, sid, method="GET", path="/", extra=(), end=True):
        flags = {"END_HEADERS"} | ({"END_STREAM"} if end else set())
        self.out += HeadersFrame(sid, self.block(method, path, extra), flags=flags).serialize()
        return self

    def data(self, sid, payload, end=False):
        self.out += DataFrame(sid, payload, flags={"END_STREAM"} if end else set()).serialize()
        return self

    def frame(self, f):
        self.out += f.serialize()
        return self

    def seed(self, name, control=0, timing=0, h2=0, h2b=0):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([control, timing, h2, h2b]) + bytes(self.out))


def main():
    os.makedirs(OUT, exist_ok=True)
    Client().headers(1).seed("get")
    Client().headers(1, "HEAD", "/l").seed("head")
    (Client().headers(1, "POST", "/s", [("content-length", "10")], end=False)
     .data(1, b"hello").data(1, b"world", end=True).seed("post_data"))
    # A body pulled with read_body, through a 16-byte stream window.
    (Client().headers(1, "POST", "/r", [("expect", "100-continue")], end=False)
     .data(1, b"0123456789abcdef").frame(WindowUpdateFrame(0, 1000))
     .data(1, b"tail", end=True).seed("post_read_body_small_window", h2=0x04))
    # Request trailers after the body.
    (Client().headers(1, "POST", "/t", end=False).data(1, b"body")
     .frame(HeadersFrame(1, Client().enc.encode([("x-sum", "1")], huffman=False),
                         flags={"END_HEADERS", "END_STREAM"}))
     .seed("request_trailers"))
    Client().headers(1, "GET", "/h").frame(RstStreamFrame(1, error_code=8)).seed("rst_stream")
    (Client().frame(PingFrame(0, b"12345678")).frame(SettingsFrame(0, flags={"ACK"}))
     .frame(PingFrame(0, b"87654321", flags={"ACK"})).seed("ping"))
    # A header block in three frames.
    c = Client()
    block = c.block("GET", "/t", [("x-long", "v" * 40)])
    (c.frame(HeadersFrame(1, block[:10], flags={"END_STREAM"}))
     .frame(ContinuationFrame(1, block[10:20])).frame(ContinuationFrame(1, block[20:], flags={"END_HEADERS"}))
     .seed("continuation"))
    # Every kind of answer, one stream each.
    c = Client({0x4: 1 << 20})
    for i, kind in enumerate("sluwadxbnmfrqtFEphkieS"):
        c.headers(2 * i + 1, "GET", "/" + kind)
    c.frame(WindowUpdateFrame(0, 1 << 20)).seed("kinds")
    # More streams than allowed at once (2), and than per connection (2).
    c = Client()
    for i in range(4):
        c.headers(2 * i + 1, "GET", "/d")
    c.seed("concurrent_limit", h2=0x02)
    c.seed("max_requests", h2=0x20)
    # Handlers that let go late: streams wait for a running handler to end.
    c = Client()
    for i in range(3):
        c.headers(2 * i + 1, "GET", "/k")
    c.frame(PingFrame(0, b"waitwait"))
    for i in range(3, 5):
        c.headers(2 * i + 1, "GET", "/k")
    c.seed("running_limit", control=0x08, timing=0x81, h2=0x02)
    # Cookies in pieces, CONNECT (no :path), a content-length over the limit.
    Client().headers(1, "GET", "/", [("cookie", "a=1"), ("cookie", "b=2")]).seed("cookies")
    c = Client()
    c.out += HeadersFrame(1, c.enc.encode([(":method", "CONNECT"), (":authority", "fuzz:443")], huffman=False),
                          flags={"END_HEADERS"}).serialize()
    c.seed("connect")
    Client().headers(1, "POST", "/", [("content-length", "100")], end=False).seed("content_length_too_large",
                                                                                  control=0x01)
    # A streamed body with pulls refused (one pending already, the response ended).
    (Client().headers(1, "POST", "/q", end=False).data(1, b"abcdef").data(1, b"ghi", end=True)
     .seed("pulls_refused", control=0x08))
    (Client().headers(1, "POST", "/e", end=False).data(1, b"borrowed", end=True)
     .headers(3, "GET", "/e").seed("end_without_begin"))
    # A head over max_header_list_size (1024).
    Client().headers(1, "GET", "/", [("x-big", "b" * 1100)]).seed("header_list_too_large", h2=0x08)
    # Resets beyond the burst (3): GOAWAY ENHANCE_YOUR_CALM.
    c = Client()
    for i in range(6):
        c.headers(2 * i + 1, "GET", "/h").frame(RstStreamFrame(2 * i + 1, error_code=8))
    c.seed("rapid_reset", h2=0x10)
    # A held stream, then the drain; a body cut by the client's EOF.
    Client().headers(1, "GET", "/h").seed("drain_held", timing=0x40)
    Client().headers(1, "POST", "/r", end=False).data(1, b"part").seed("eof_mid_body", control=0x80)
    # A body over the small limit (64 bytes).
    Client().headers(1, "POST", "/", end=False).data(1, b"x" * 100, end=True).seed("body_too_large", control=0x01)
    # Priority, a stream window update, the client's GOAWAY.
    (Client().frame(PriorityFrame(3, depends_on=1, stream_weight=16)).headers(1, "GET", "/p")
     .frame(WindowUpdateFrame(1, 100000)).frame(GoAwayFrame(0, last_stream_id=0)).seed("priority_goaway"))
    # Timers (a 55 ms pause after the last byte): a client that stops
    # reading a large answer (write timeout), a body that stops coming (body
    # timeout), a ping and its timeout (110 ms).
    Client().headers(1, "GET", "/b").seed("timer_write", timing=0xa1, h2=0x01)
    Client().headers(1, "POST", "/r", end=False).data(1, b"x").seed("timer_body", timing=0x81, h2=0x01)
    Client().seed("timer_ping_idle", timing=0xa1, h2=0x41)
    # WebSocket over HTTP/2 (RFC 8441): an extended CONNECT, echoed messages,
    # the client's end; one left open for the drain; one the client resets;
    # one while the setting is off.
    def websocket(c):
        block = c.enc.encode([(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http"),
                              (":path", "/chat"), (":authority", "fuzz"), ("sec-websocket-version", "13")],
                             huffman=False)
        return c.frame(HeadersFrame(1, block, flags={"END_HEADERS"}))
    websocket(Client()).data(1, b"hello shared").data(1, b"close", end=True).seed("websocket", h2b=1)
    websocket(Client()).data(1, b"hello").seed("websocket_drain", timing=0x40, h2b=1)
    websocket(Client()).data(1, b"hello").frame(RstStreamFrame(1, error_code=8)).seed("websocket_reset", h2b=1)
    websocket(Client()).data(1, b"hello", end=True).seed("websocket_off")
    # The preface and frames in small pieces.
    Client().headers(1, "GET", "/s").seed("split", control=0x36)


if __name__ == "__main__":
    main()
