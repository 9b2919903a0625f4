"""The end of an HTTP/2 connection over TLS whose client reads slowly (its
socket full to the end): every byte of the last response, the GOAWAY and
TLS's close_notify reach the client. HTTP/2 now closes through the same
transport step as HTTP/1.1 (what TLS holds and the close_notify leave before
the socket is shut, within the write timeout); before, it shut the socket at
once when the close_notify did not fit, and a strict client saw a truncated
stream. (That needs the socket full to the byte at the close: this test
shows the behaviour, it cannot force that moment.)"""
import os
import time

import h2.config
import h2.events
import h2.settings

import m0test
from h2_support import _Connection, connect, h2_context, native_config
from support.tls import TLS_LISTEN, ServerCertificate

SIZE = 8 * 1024 * 1024 + 13  # beyond what the socket buffers hold (tcp_wmem's 4 MiB)


def test_a_slow_reader_gets_every_byte_and_the_goaway_when_the_connection_ends(m0_server, tmp_path):
    certs = ServerCertificate(tmp_path / "certs")
    www = tmp_path / "www"
    www.mkdir()
    (www / "big.bin").write_bytes(os.urandom(SIZE))
    # One stream a connection: the GOAWAY, then the close, follow the response.
    server = m0_server(native_config(www, "http2: {max_requests_per_connection: 1}\n") + certs.tls_section(),
                       *TLS_LISTEN)
    raw = connect(server.ports[1], timeout=60, rcvbuf=4096)
    # The end must be TLS's close_notify, not a bare FIN (a truncation).
    sock = h2_context(certs).wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
    # h2 takes frames after a GOAWAY for errors; the streams up to its last id go on.
    conn = _Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
    conn.increment_flow_control_window(2**30)
    conn.send_headers(1, [(":method", "GET"), (":scheme", "https"), (":authority", "localhost"),
                          (":path", "/files/big.bin")], end_stream=True)
    sock.sendall(conn.data_to_send())
    got, goaway, ended = 0, None, False
    deadline = time.monotonic() + m0test.scaled(120)
    while time.monotonic() < deadline:
        # Small reads with pauses: m0's socket stays full to the end.
        data = sock.recv(4096)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                got += len(event.data)
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                ended = True
            elif isinstance(event, h2.events.ConnectionTerminated):
                goaway = event
        try:
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
        except OSError:
            pass  # m0 may have shut its side: what it sent is still to be read
        time.sleep(0.0002)
    sock.close()
    assert (got, ended) == (SIZE, True)
    assert goaway is not None and goaway.error_code == 0
