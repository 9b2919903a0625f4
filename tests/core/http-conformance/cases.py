"""The conformance table: raw request bytes and what RFC 9110/9112 call for.

Each case is either accepted (`ok`: the parses the engine must hand to the
handler, in order, and whether the connection stays open) or rejected (`bad`:
the allowed status codes; the connection must then carry `Connection: close`
and be closed). Where the RFCs leave a choice, m0's choice is the strict one
and is documented in docs/security.md ("Policy choices"); a tuple of statuses
is given only where the RFCs themselves allow several.

`config` names the server the case runs against (see conftest.py):
  default  engine defaults (header timeout raised out of the way)
  small    small limits, for the 413/414/431 boundaries
"""
from dataclasses import dataclass, field


@dataclass
class Parsed:
    method: str
    target: str
    headers: list
    body: bytes = b""
    version: int = 11


@dataclass
class Case:
    name: str
    raw: bytes
    rfc: str
    requests: list = field(default_factory=list)  # parses expected, in order
    status: tuple = ()                            # rejected: allowed statuses
    closes: object = False                        # accepted: True, False, None (either)
    config: str = "default"
    reflect: bool = True                          # False for HEAD (no body to compare)
    no_interim: bool = False                      # no 100 Continue may precede the answer

    @property
    def rejected(self):
        return bool(self.status)


CASES = []


def ok(name, raw, *requests, rfc, closes=False, config="default", reflect=True):
    CASES.append(Case(name, raw, rfc, list(requests), (), closes, config, reflect))


def bad(name, raw, status, *, rfc, after=(), config="default", no_interim=False):
    """`after`: requests the engine must answer before the faulty one."""
    status = status if isinstance(status, tuple) else (status,)
    CASES.append(Case(name, raw, rfc, list(after), status, True, config, True, no_interim))


HOST = b"Host: example.com\r\n"
HOST_H = ("Host", "example.com")


def head(request_line=b"GET / HTTP/1.1", fields=b""):
    """A request head: request line, Host, more field lines, empty line."""
    return request_line + b"\r\n" + HOST + fields + b"\r\n"


def H(*pairs):
    """Expected header list: Host first, then `pairs`."""
    return [HOST_H, *pairs]


def get(target="/", *pairs, version=11):
    return Parsed("GET", target, H(*pairs), b"", version)


def chunked(body, fields=b"", target=b"/"):
    return head(b"POST " + target + b" HTTP/1.1", b"Transfer-Encoding: chunked\r\n" + fields) + body


def chunked_parse(body, *pairs, target="/"):
    return Parsed("POST", target, H(("Transfer-Encoding", "chunked"), *pairs), body)


def with_length(body, fields=b"", length=None):
    n = str(len(body) if length is None else length).encode()
    return head(b"POST / HTTP/1.1", b"Content-Length: " + n + b"\r\n" + fields) + body


def length_parse(body, *pairs, length=None):
    n = str(len(body) if length is None else length)
    return Parsed("POST", "/", H(("Content-Length", n), *pairs), body)


# --- accepted: request line and target (RFC 9112 section 3) ---------------------------

ok("get_minimal", head(), get(), rfc="9112 3")
ok("get_query", head(b"GET /a/b?x=1&y=2 HTTP/1.1"), get("/a/b?x=1&y=2"), rfc="9112 3.2.1")
LEGAL_TARGET = "/a-b_c.d~e/%20%2F;p=1,2:@!$&'()*+=?q=/?:@-._~!$&'()*+,;="
ok("target_all_legal_characters", head(b"GET " + LEGAL_TARGET.encode() + b" HTTP/1.1"),
   get(LEGAL_TARGET), rfc="9112 3.2.1, 3986 3.3-3.4")
ok("connect_authority_form", head(b"CONNECT example.com:443 HTTP/1.1"),
   Parsed("CONNECT", "example.com:443", H()), rfc="9112 3.2.3 (reaches the handler: docs/security.md)")
ok("target_percent_escapes_kept", head(b"GET /a%2Fb%00c%C3%A9 HTTP/1.1"), get("/a%2Fb%00c%C3%A9"),
   rfc="9112 3.2.1 (the engine does not decode)")
ok("target_raw_utf8", head(b"GET /caf\xc3\xa9?q=\xc3\xa9t\xc3\xa9 HTTP/1.1"), get("/caf\xc3\xa9?q=\xc3\xa9t\xc3\xa9"),
   rfc="9112 3.2 (m0 accepts bytes >= 0x80 as sent, as nginx and gunicorn do; never decoded)")
ok("target_high_bytes_kept", head(b"GET /\x80\xe9\xff HTTP/1.1"), get("/\x80\xe9\xff"),
   rfc="9112 3.2 (any byte >= 0x80, UTF-8 or not, passes through)")
ok("target_8000_octets", head(b"GET /" + b"a" * 7999 + b" HTTP/1.1"), get("/" + "a" * 7999),
   rfc="9112 3 (RECOMMENDED: request lines of at least 8000 octets)")
ok("absolute_form", head(b"GET http://example.com/a?b=c HTTP/1.1"), get("http://example.com/a?b=c"),
   rfc="9112 3.2.2 (a server MUST accept the absolute-form)")
ok("absolute_form_host_differs",
   b"GET http://example.com/ HTTP/1.1\r\nHost: other.example\r\n\r\n",
   Parsed("GET", "http://example.com/", [("Host", "other.example")]),
   rfc="9112 3.2.2 (the Host field is then ignored)")
ok("absolute_form_https", head(b"GET https://example.com:8443/x HTTP/1.1"), get("https://example.com:8443/x"),
   rfc="9112 3.2.2")
ok("options_asterisk", head(b"OPTIONS * HTTP/1.1"), Parsed("OPTIONS", "*", H()), rfc="9112 3.2.4")
ok("options_path", head(b"OPTIONS /x HTTP/1.1"), Parsed("OPTIONS", "/x", H()), rfc="9110 9.3.7")
ok("head_request", head(b"HEAD / HTTP/1.1"), Parsed("HEAD", "/", H()), rfc="9110 9.3.2", reflect=False)
ok("delete_request", head(b"DELETE /r/1 HTTP/1.1"), Parsed("DELETE", "/r/1", H()), rfc="9110 9.3.5")
ok("unknown_method_token", head(b"PROPFIND /dav HTTP/1.1"), Parsed("PROPFIND", "/dav", H()),
   rfc="9110 9.1 (methods are extensible tokens)")
ok("method_with_tchars", head(b"M-SEARCH_2.0!~ / HTTP/1.1"), Parsed("M-SEARCH_2.0!~", "/", H()),
   rfc="9110 5.6.2 tchar")
ok("method_is_case_sensitive", head(b"get / HTTP/1.1"), Parsed("get", "/", H()),
   rfc="9110 9.1 (case-sensitive; `get` is not GET)")
ok("minor_version_above_1", head(b"GET / HTTP/1.2"), get("/", version=11),
   rfc="9110 2.5 (process as the highest 1.x minor implemented)")
ok("one_leading_empty_line", b"\r\n" + head(), get(), rfc="9112 2.2 (SHOULD ignore at least one)")

# --- accepted: header fields (RFC 9110 section 5, RFC 9112 section 5) ------------------

ok("header_names_case_insensitive_host", b"GET / HTTP/1.1\r\nhOsT: example.com\r\n\r\n",
   Parsed("GET", "/", [("hOsT", "example.com")]), rfc="9110 5.1")
ok("ows_around_value_trimmed", head(fields=b"X-A: \t value \t\r\n"), get("/", ("X-A", "value")), rfc="9112 5.1")
ok("inner_whitespace_kept", head(fields=b"X-A: a  b\tc\r\n"), get("/", ("X-A", "a  b\tc")), rfc="9110 5.5")
ok("no_space_after_colon", head(fields=b"X-A:v\r\n"), get("/", ("X-A", "v")), rfc="9112 5.1")
ok("empty_value", head(fields=b"X-Empty:\r\n"), get("/", ("X-Empty", "")), rfc="9110 5.5")
ok("empty_value_only_ows", head(fields=b"X-Empty: \t \r\n"), get("/", ("X-Empty", "")), rfc="9110 5.5")
ok("value_obs_text_kept", head(fields=b"X-A: caf\xe9 \xff\x80\r\n"), get("/", ("X-A", "caf\xe9 \xff\x80")),
   rfc="9110 5.5 obs-text")
ok("value_with_colons", head(fields=b"X-A: a:b::c\r\n"), get("/", ("X-A", "a:b::c")), rfc="9112 5")
ok("value_with_quotes_commas", head(fields=b'X-A: "a, b", c; q=1\r\n'), get("/", ("X-A", '"a, b", c; q=1')),
   rfc="9110 5.5")
ok("duplicate_fields_kept_in_order", head(fields=b"X-A: 1\r\nX-B: 2\r\nx-a: 3\r\n"),
   get("/", ("X-A", "1"), ("X-B", "2"), ("x-a", "3")), rfc="9110 5.2-5.3")
ok("name_all_tchars", head(fields=b"!#$%&'*+-.^_`|~09azAZ: v\r\n"), get("/", ("!#$%&'*+-.^_`|~09azAZ", "v")),
   rfc="9110 5.1, 5.6.2")
ok("fifty_fields", head(fields=b"".join(b"X-%d: %d\r\n" % (i, i) for i in range(50))),
   get("/", *[(f"X-{i}", str(i)) for i in range(50)]), rfc="9110 5")
ok("te_request_field_is_not_transfer_encoding", with_length(b"hello", b"TE: chunked\r\n"),
   length_parse(b"hello", ("TE", "chunked")), rfc="9110 10.1.4 (TE is not Transfer-Encoding)")
ok("transfer_underscore_encoding_is_plain_field", with_length(b"hello", b"Transfer_Encoding: chunked\r\n"),
   length_parse(b"hello", ("Transfer_Encoding", "chunked")), rfc="9110 5.1")
ok("host_with_port", b"GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n",
   Parsed("GET", "/", [("Host", "example.com:8080")]), rfc="9110 7.2")
ok("host_ipv6_literal", b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
   Parsed("GET", "/", [("Host", "[::1]:8080")]), rfc="9110 7.2, 3986 3.2.2")
ok("host_empty_value", b"GET / HTTP/1.1\r\nHost:\r\n\r\n", Parsed("GET", "/", [("Host", "")]),
   rfc="9112 3.2 (empty Host when the URI has no authority)")

# --- accepted: bodies with Content-Length (RFC 9112 section 6) -------------------------

ok("content_length_body", with_length(b"hello"), length_parse(b"hello"), rfc="9112 6.2")
ok("content_length_zero", with_length(b""), length_parse(b""), rfc="9112 6.2")
ok("content_length_leading_zeros", head(b"POST / HTTP/1.1", b"Content-Length: 005\r\n") + b"hello",
   Parsed("POST", "/", H(("Content-Length", "005")), b"hello"), rfc="9110 8.6 (1*DIGIT)")
ok("content_length_ows", head(b"POST / HTTP/1.1", b"Content-Length: \t 5 \t\r\n") + b"hello",
   Parsed("POST", "/", H(("Content-Length", "5")), b"hello"), rfc="9112 5.1")
ok("content_length_name_lowercase", head(b"POST / HTTP/1.1", b"content-length: 5\r\n") + b"hello",
   Parsed("POST", "/", H(("content-length", "5")), b"hello"), rfc="9110 5.1")
ok("get_with_body", head(b"GET / HTTP/1.1", b"Content-Length: 3\r\n") + b"abc",
   Parsed("GET", "/", H(("Content-Length", "3")), b"abc"), rfc="9110 9.3.1")
ok("binary_body", with_length(bytes(range(256))), length_parse(bytes(range(256))), rfc="9112 6")
ok("body_looks_like_request", with_length(b"GET /x HTTP/1.1\r\n\r\n"), length_parse(b"GET /x HTTP/1.1\r\n\r\n"),
   rfc="9112 6.2 (the length decides, not the content)")
ok("post_without_length_has_no_body", head(b"POST / HTTP/1.1"), Parsed("POST", "/", H()),
   rfc="9112 6.3 item 7")
ok("body_at_limit", with_length(b"x" * 64), length_parse(b"x" * 64), config="small", rfc="9112 6.2")

# --- accepted: chunked (RFC 9112 section 7) --------------------------------------------

ok("chunked_simple", chunked(b"5\r\nhello\r\n0\r\n\r\n"), chunked_parse(b"hello"), rfc="9112 7.1")
ok("chunked_several", chunked(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), chunked_parse(b"hello world"),
   rfc="9112 7.1")
ok("chunked_hex_both_cases", chunked(b"A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n"),
   chunked_parse(b"0123456789abcdefghij"), rfc="9112 7.1 HEXDIG")
ok("chunked_leading_zeros", chunked(b"0005\r\nhello\r\n000\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1 (last-chunk = 1*\"0\")")
ok("chunked_data_with_crlf", chunked(b"4\r\n\r\n\r\n\r\n0\r\n\r\n"), chunked_parse(b"\r\n\r\n"), rfc="9112 7.1")
ok("chunked_empty_body", chunked(b"0\r\n\r\n"), chunked_parse(b""), rfc="9112 7.1")
ok("chunked_ext_token_value", chunked(b"5;name=value\r\nhello\r\n0\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1.1")
ok("chunked_ext_name_only", chunked(b"5;name\r\nhello\r\n0\r\n\r\n"), chunked_parse(b"hello"), rfc="9112 7.1.1")
ok("chunked_ext_quoted", chunked(b'5;name="a b;c=d"\r\nhello\r\n0\r\n\r\n'), chunked_parse(b"hello"),
   rfc="9112 7.1.1 quoted-string")
ok("chunked_ext_quoted_pair", chunked(b'5;n="a\\"b\\\\"\r\nhello\r\n0\r\n\r\n'), chunked_parse(b"hello"),
   rfc="9110 5.6.4 quoted-pair")
ok("chunked_ext_several", chunked(b"5;a=1;b;c=\"x\"\r\nhello\r\n0\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1.1")
ok("chunked_ext_bws", chunked(b"5 ; a = 1\r\nhello\r\n0\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1.1 (BWS around ; and =)")
ok("chunked_ext_on_last_chunk", chunked(b"5\r\nhello\r\n0;done\r\n\r\n"), chunked_parse(b"hello"), rfc="9112 7.1")
ok("chunked_trailer_ignored", chunked(b"5\r\nhello\r\n0\r\nX-Trailer: v\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1.2, 9110 6.5.1 (not merged into the header section)")
ok("chunked_trailers_several", chunked(b"5\r\nhello\r\n0\r\nX-T1: a\r\nX-T2: b\r\n\r\n"), chunked_parse(b"hello"),
   rfc="9112 7.1.2")
ok("chunked_trailer_not_a_forbidden_name", chunked(b"5\r\nhello\r\n0\r\nContent-Lengths: 50\r\nHosts: x\r\n\r\n"),
   chunked_parse(b"hello"), rfc="9110 6.5.1 (only the named fields are refused)")
ok("chunked_uppercase_coding", head(b"POST / HTTP/1.1", b"Transfer-Encoding: CHUNKED\r\n") + b"2\r\nhi\r\n0\r\n\r\n",
   Parsed("POST", "/", H(("Transfer-Encoding", "CHUNKED")), b"hi"), rfc="9112 7 (coding names are case-insensitive)")
ok("chunked_coding_ows", head(b"POST / HTTP/1.1", b"Transfer-Encoding: \t chunked \t\r\n") + b"2\r\nhi\r\n0\r\n\r\n",
   Parsed("POST", "/", H(("Transfer-Encoding", "chunked")), b"hi"), rfc="9112 5.1")
ok("chunked_binary", chunked(b"100\r\n" + bytes(range(256)) + b"\r\n0\r\n\r\n"), chunked_parse(bytes(range(256))),
   rfc="9112 7.1")
ok("chunked_at_limit", chunked(b"20\r\n" + b"x" * 32 + b"\r\n20\r\n" + b"y" * 32 + b"\r\n0\r\n\r\n"),
   chunked_parse(b"x" * 32 + b"y" * 32), config="small", rfc="9112 7.1")

# --- accepted: connections (RFC 9112 section 9) ----------------------------------------

ok("http11_keeps_alive", head(), get(), closes=False, rfc="9112 9.3")
ok("http11_connection_close", head(fields=b"Connection: close\r\n"), get("/", ("Connection", "close")),
   closes=True, rfc="9112 9.6")
ok("connection_close_any_case", head(fields=b"Connection: CLOSE\r\n"), get("/", ("Connection", "CLOSE")),
   closes=True, rfc="9112 9.6 (connection options are case-insensitive)")
ok("connection_close_in_list", head(fields=b"Connection: x-opt, close\r\n"),
   get("/", ("Connection", "x-opt, close")), closes=True, rfc="9110 7.6.1")
ok("http10_closes", b"GET / HTTP/1.0\r\n\r\n", Parsed("GET", "/", [], b"", 10), closes=True,
   rfc="9112 9.3 (HTTP/1.0 persists only when asked); 9112 3.2 (Host optional)")
ok("http10_keep_alive_when_asked", b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
   Parsed("GET", "/", [("Connection", "keep-alive")], b"", 10), closes=False, rfc="9112 C.2.2")
ok("http10_with_host", b"GET / HTTP/1.0\r\nHost: example.com\r\n\r\n", Parsed("GET", "/", H(), b"", 10),
   closes=True, rfc="9112 3.2")
ok("http10_body", b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi",
   Parsed("POST", "/", [("Content-Length", "2")], b"hi", 10), closes=True, rfc="9112 6.2")
ok("pipelined_two_gets", head(b"GET /1 HTTP/1.1") + head(b"GET /2 HTTP/1.1"), get("/1"), get("/2"),
   rfc="9112 9.3.2")
ok("pipelined_bodies", with_length(b"hello") + chunked(b"3\r\nabc\r\n0\r\n\r\n") + head(b"GET /3 HTTP/1.1"),
   length_parse(b"hello"), chunked_parse(b"abc"), get("/3"), rfc="9112 9.3.2")
ok("pipelined_after_trailers", chunked(b"1\r\na\r\n0\r\nX-T: 1\r\n\r\n") + head(b"GET /next HTTP/1.1"),
   chunked_parse(b"a"), get("/next"), rfc="9112 7.1.2, 9.3.2")
ok("pipelined_close_stops", head(fields=b"Connection: close\r\n") + head(b"GET /ignored HTTP/1.1"),
   get("/", ("Connection", "close")), closes=True, rfc="9112 9.6 (nothing is read after close)")
ok("expect_continue_with_body", with_length(b"hello", b"Expect: 100-continue\r\n"),
   length_parse(b"hello", ("Expect", "100-continue")), rfc="9110 10.1.1")

# --- rejected: framing (RFC 9112 section 6) --------------------------------------------

bad("cl_and_te", head(b"POST / HTTP/1.1", b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") +
    b"0\r\n\r\n", 400, rfc="9112 6.1 (MAY reject; m0 rejects)")
bad("te_and_cl", head(b"POST / HTTP/1.1", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") +
    b"0\r\n\r\n", 400, rfc="9112 6.1")
bad("cl_zero_and_te", head(b"POST / HTTP/1.1", b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n") +
    b"0\r\n\r\n", 400, rfc="9112 6.1")
bad("cl_te_smuggle", head(b"POST / HTTP/1.1", b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n") +
    b"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, rfc="9112 6.1, 11.2")
bad("cl_duplicate_differing", head(b"POST / HTTP/1.1", b"Content-Length: 5\r\nContent-Length: 6\r\n") +
    b"hello!", 400, rfc="9112 6.3 item 5")
bad("cl_list_differing", head(b"POST / HTTP/1.1", b"Content-Length: 5, 6\r\n") + b"hello!", 400,
    rfc="9112 6.3 item 5")
bad("cl_duplicate_identical", head(b"POST / HTTP/1.1", b"Content-Length: 5\r\nContent-Length: 5\r\n") +
    b"hello", 400, rfc="9110 8.6 (MAY reject; m0 rejects)")
bad("cl_list_identical", head(b"POST / HTTP/1.1", b"Content-Length: 5, 5\r\n") + b"hello", 400,
    rfc="9110 8.6 (MAY reject; m0 rejects)")
for name, value in [("plus", b"+5"), ("minus", b"-1"), ("hex", b"0x10"), ("space_inside", b"1 0"),
                    ("empty", b""), ("alpha", b"abc"), ("decimal_point", b"5.0"), ("trailing_junk", b"5a"),
                    ("ctl_inside", b"5\x0b"), ("comma_only", b",")]:
    bad(f"cl_{name}", head(b"POST / HTTP/1.1", b"Content-Length: " + value + b"\r\n") + b"hello", 400,
        rfc="9110 8.6, 9112 6.3 item 5")
bad("cl_overflow", head(b"POST / HTTP/1.1", b"Content-Length: 123456789012345678901234567890\r\n") + b"hi",
    (400, 413), rfc="9110 8.6 (anticipate overflow)")
bad("cl_over_limit", with_length(b"x" * 65), 413, config="small", rfc="9110 15.5.14")
bad("cl_over_default_limit", head(b"POST / HTTP/1.1", b"Content-Length: 2000000000\r\n"), 413,
    rfc="9110 15.5.14 (answered without reading the body)")
bad("expect_continue_over_limit", head(b"POST / HTTP/1.1", b"Content-Length: 1000\r\nExpect: 100-continue\r\n"),
    413, config="small", no_interim=True, rfc="9110 10.1.1 (final status instead of 100)")
bad("te_gzip_chunked", head(b"POST / HTTP/1.1", b"Transfer-Encoding: gzip, chunked\r\n") + b"0\r\n\r\n", 501,
    rfc="9112 6.1 (coding not implemented: SHOULD 501)")
bad("te_unknown_chunked", head(b"POST / HTTP/1.1", b"Transfer-Encoding: foo, chunked\r\n") + b"0\r\n\r\n", 501,
    rfc="9112 6.1")
bad("te_two_fields_gzip_chunked",
    head(b"POST / HTTP/1.1", b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n") + b"0\r\n\r\n", 501,
    rfc="9112 6.1, 9110 5.3 (field lines combine)")
for name, value in [("chunked_not_last", b"chunked, gzip"), ("gzip_only", b"gzip"), ("unknown_only", b"foo"),
                    ("xchunked", b"xchunked"), ("identity", b"identity")]:
    bad(f"te_{name}", head(b"POST / HTTP/1.1", b"Transfer-Encoding: " + value + b"\r\n") + b"0\r\n\r\n",
        (400, 501), rfc="9112 6.3 item 4 (MUST 400) / 6.1 (unknown coding: SHOULD 501)")
bad("te_chunked_twice", head(b"POST / HTTP/1.1", b"Transfer-Encoding: chunked, chunked\r\n") + b"0\r\n\r\n", 400,
    rfc="9112 7 (chunked MUST NOT be applied twice)")
bad("te_two_fields_chunked",
    head(b"POST / HTTP/1.1", b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") + b"0\r\n\r\n", 400,
    rfc="9112 7")
bad("te_empty", head(b"POST / HTTP/1.1", b"Transfer-Encoding:\r\n") + b"0\r\n\r\n", 400, rfc="9112 6.3 item 4")
bad("te_on_http10", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
    rfc="9112 6.1 (HTTP/1.0 with Transfer-Encoding: faulty framing)")

# --- rejected: chunked (RFC 9112 section 7.1) ------------------------------------------

for name, size_line in [("empty", b""), ("0x_prefix", b"0x5"), ("negative", b"-5"), ("plus", b"+5"),
                        ("leading_space", b" 5"), ("trailing_space", b"5 "), ("trailing_tab", b"5\t"),
                        ("not_hex", b"g"), ("underscore", b"0_5"), ("nul", b"5\x00")]:
    bad(f"chunk_size_{name}", chunked(size_line + b"\r\nhello\r\n0\r\n\r\n"), 400, rfc="9112 7.1 chunk-size")
bad("chunk_size_overflow", chunked(b"fffffffffffffffff1\r\nhello\r\n0\r\n\r\n"), (400, 413),
    rfc="9112 7.1 (anticipate overflow)")
bad("chunk_size_wraps_to_small", chunked(b"10000000000000005\r\nhello\r\n0\r\n\r\n"), (400, 413),
    rfc="9112 7.1 (2^64 + 5 must not read as 5)")
bad("chunk_over_limit", chunked(b"41\r\n" + b"x" * 65 + b"\r\n0\r\n\r\n"), 413, config="small",
    rfc="9110 15.5.14")
bad("chunks_total_over_limit", chunked(b"28\r\n" + b"x" * 40 + b"\r\n28\r\n" + b"y" * 40 + b"\r\n0\r\n\r\n"), 413,
    config="small", rfc="9110 15.5.14")
bad("chunk_data_longer_than_size", chunked(b"5\r\nhelloX\r\n0\r\n\r\n"), 400, rfc="9112 7.1 (CRLF after data)")
bad("chunk_data_shorter_than_size", chunked(b"6\r\nhello\r\n0\r\n\r\n\r\n"), 400, rfc="9112 7.1")
bad("chunk_data_bare_lf", chunked(b"5\r\nhello\n0\r\n\r\n"), 400, rfc="9112 7.1, 2.2")
bad("chunk_size_bare_lf", chunked(b"5\nhello\r\n0\r\n\r\n"), 400, rfc="9112 7.1, 2.2")
bad("chunk_size_bare_cr", chunked(b"5\rhello\r\n0\r\n\r\n"), 400, rfc="9112 7.1, 2.2")
bad("last_chunk_bare_lf", chunked(b"5\r\nhello\r\n0\n\r\n"), 400, rfc="9112 7.1, 2.2")
bad("chunked_end_bare_lf", chunked(b"5\r\nhello\r\n0\r\n\n"), 400, rfc="9112 7.1, 2.2")
for name, ext in [("empty_name", b";"), ("bad_name", b";a@b=c"), ("empty_value", b";a="),
                  ("unterminated_quote", b';a="xyz'), ("quote_in_token", b';a=b"c'),
                  ("space_in_value", b";a=b c"), ("ctl", b";a=\x01"), ("nul", b";a\x00=b"),
                  ("bare_cr_in_quoted", b';a="x\ry"'), ("no_semicolon", b" a=b")]:
    bad(f"chunk_ext_{name}", chunked(b"5" + ext + b"\r\nhello\r\n0\r\n\r\n"), 400, rfc="9112 7.1.1 chunk-ext")
bad("trailer_no_colon", chunked(b"5\r\nhello\r\n0\r\nX-Trailer\r\n\r\n"), 400, rfc="9112 7.1.2, 5")
bad("trailer_space_before_colon", chunked(b"5\r\nhello\r\n0\r\nX-T : v\r\n\r\n"), 400, rfc="9112 7.1.2, 5.1")
bad("trailer_obs_fold", chunked(b"5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n"), 400, rfc="9112 7.1.2, 5.2")
bad("trailer_bare_lf", chunked(b"5\r\nhello\r\n0\r\nX-T: a\n\r\n"), 400, rfc="9112 7.1.2, 2.2")
bad("trailer_too_large", chunked(b"5\r\nhello\r\n0\r\nX-T: " + b"v" * 400 + b"\r\n\r\n"), (400, 431),
    config="small", rfc="9110 6.5, 9112 7.1.2 (trailers obey the header limits)")
bad("trailers_too_many", chunked(b"5\r\nhello\r\n0\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(40)) + b"\r\n"),
    (400, 431), config="small", rfc="9110 6.5, 9112 7.1.2")
# RFC 9110 6.5.1: fields needed before the content may not be trailers; m0
# refuses them (policy: docs/security.md) rather than dropping them.
for name, field_line in [("content_length", b"Content-Length: 50"), ("transfer_encoding", b"Transfer-Encoding: chunked"),
                         ("host", b"Host: other.example"), ("trailer", b"Trailer: X-T"),
                         ("content_type", b"Content-Type: text/plain"), ("authorization", b"Authorization: Basic eA=="),
                         ("expect", b"Expect: 100-continue"), ("cookie", b"Cookie: a=b"),
                         ("range", b"Range: bytes=0-1"), ("lower_case", b"content-encoding: gzip"),
                         ("after_allowed_one", b"X-T: 1\r\nCache-Control: no-cache")]:
    bad(f"trailer_forbidden_{name}", chunked(b"5\r\nhello\r\n0\r\n" + field_line + b"\r\n\r\n"), 400,
        rfc="9110 6.5.1 (framing, routing, request modifiers, authentication, content processing)")
bad("chunked_request_swallowed_into_trailer",
    chunked(b"5\r\nhello\r\n0\r\nGET /smuggled HTTP/1.1\r\nHost: example.com\r\n\r\n"), 400,
    rfc="9112 7.1.2 (a request line is not a trailer field)")

# --- rejected: request line (RFC 9112 section 3) ---------------------------------------

for name, line in [("bad_char", b"G(T / HTTP/1.1"), ("brace", b"G{T / HTTP/1.1"), ("non_ascii", b"G\xc9T / HTTP/1.1"),
                   ("nul", b"G\x00T / HTTP/1.1"), ("empty", b" / HTTP/1.1")]:
    bad(f"method_{name}", head(line), 400, rfc="9112 3.1 (method = token)")
bad("method_very_long", head(b"A" * 9000 + b" / HTTP/1.1"), (400, 501),
    rfc="9112 3 (method longer than any implemented: SHOULD 501)")
for name, line in [("double_space_after_method", b"GET  / HTTP/1.1"),
                   ("double_space_before_version", b"GET /  HTTP/1.1"),
                   ("tab_separator", b"GET\t/ HTTP/1.1"), ("trailing_space", b"GET / HTTP/1.1 "),
                   ("leading_space", b" GET / HTTP/1.1"), ("missing_version", b"GET /"),
                   ("missing_target", b"GET HTTP/1.1"), ("only_method", b"GET"),
                   ("vt_separator", b"GET\x0b/ HTTP/1.1"), ("ff_separator", b"GET /\x0cHTTP/1.1")]:
    bad(f"request_line_{name}", head(line), 400, rfc="9112 3 (single SP separators)")
for name, target in [("space", b"/a b"), ("ctl", b"/a\x01b"), ("del", b"/a\x7fb"), ("nul", b"/a\x00b"),
                     ("del_after_utf8", b"/caf\xc3\xa9\x7f"), ("ctl_in_query_after_utf8", b"/?caf\xc3\xa9\x1b"),
                     ("fragment", b"/a#frag"), ("angle_brackets", b"/<script>"),
                     ("double_quote", b'/a"b'), ("backslash", b"/a\\b"), ("bad_percent", b"/a%zz"),
                     ("truncated_percent", b"/a%2"), ("bad_percent_in_query", b"/a?x=%zz"),
                     ("truncated_percent_in_query", b"/a?x=1%"), ("relative", b"a/b"), ("query_only", b"?x=1"),
                     ("tab", b"/a\tb")]:
    bad(f"target_{name}", head(b"GET " + target + b" HTTP/1.1"), 400, rfc="9112 3.2, 3986 (request-target)")
bad("asterisk_form_with_get", head(b"GET * HTTP/1.1"), 400, rfc="9112 3.2.4 (only OPTIONS)")
# (`example.com:80` would parse as an absolute-URI with scheme `example.com`;
# an IP literal cannot be a scheme, so this is unambiguously authority-form.)
bad("authority_form_with_get", head(b"GET 127.0.0.1:8080 HTTP/1.1"), 400, rfc="9112 3.2.3 (only CONNECT)")
bad("connect_with_origin_form", head(b"CONNECT / HTTP/1.1"), 400, rfc="9112 3.2.3 (CONNECT takes authority-form)")
bad("absolute_form_without_host_field", b"GET http://example.com/ HTTP/1.1\r\n\r\n", 400,
    rfc="9112 3.2 (Host required on HTTP/1.1)")
for name, version in [("lowercase", b"http/1.1"), ("mixed_case", b"Http/1.1"), ("minor_x", b"HTTP/1.x"),
                      ("no_minor", b"HTTP/1"), ("two_digit_minor", b"HTTP/1.10"), ("no_dot", b"HTTP/11"),
                      ("space_after_slash", b"HTTP/ 1.1"), ("garbage", b"FOO/1.1"), ("no_slash", b"HTTP1.1")]:
    bad(f"version_{name}", head(b"GET / " + version), 400, rfc="9112 2.3 (HTTP-version is case-sensitive)")
bad("version_2_0", head(b"GET / HTTP/2.0"), 505, rfc="9110 15.6.6")
bad("version_3_0", head(b"GET / HTTP/3.0"), 505, rfc="9110 15.6.6")
bad("version_0_9", head(b"GET / HTTP/0.9"), 505, rfc="9110 15.6.6")
bad("version_3_no_minor", head(b"GET / HTTP/3"), (400, 505), rfc="9112 2.3, 9110 15.6.6")
# Where HTTP/2 is on (the default) the preface starts an h2c connection (tests/core/http2).
bad("h2_preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", (400, 505), config="small", rfc="9113 3.4, 9110 15.6.6")
bad("target_too_long", head(b"GET /" + b"a" * 9000 + b" HTTP/1.1"), 414, rfc="9112 3 (MUST 414)")
bad("target_too_long_small_limit", head(b"GET /" + b"a" * 300 + b" HTTP/1.1"), 414, config="small", rfc="9112 3")

# --- rejected: line endings and control bytes (RFC 9112 section 2.2) -------------------

bad("bare_lf_everywhere", b"GET / HTTP/1.1\nHost: example.com\n\n", 400, rfc="9112 2.2 (MAY accept LF; m0 does not)")
bad("bare_lf_request_line", b"GET / HTTP/1.1\nHost: example.com\r\n\r\n", 400, rfc="9112 2.2")
bad("bare_lf_field_line", b"GET / HTTP/1.1\r\nHost: example.com\nX-A: 1\r\n\r\n", 400, rfc="9112 2.2")
bad("bare_lf_end_of_head", b"GET / HTTP/1.1\r\nHost: example.com\r\n\n", 400, rfc="9112 2.2")
bad("bare_lf_leading_line", b"\n" + head(), 400, rfc="9112 2.2")
bad("bare_cr_request_line", b"GET / HTTP/1.1\rHost: example.com\r\n\r\n", 400, rfc="9112 2.2 (bare CR)")
bad("bare_cr_in_target", head(b"GET /a\rb HTTP/1.1"), 400, rfc="9112 2.2")
bad("bare_cr_in_value", head(fields=b"X-A: a\rb\r\n"), 400, rfc="9112 2.2, 9110 5.5")
bad("bare_cr_in_name", head(fields=b"X\r-A: v\r\n"), 400, rfc="9112 2.2")
bad("bare_cr_end_of_head", b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\r\n", 400, rfc="9112 2.2")
for name, byte in [("nul", b"\x00"), ("soh", b"\x01"), ("vt", b"\x0b"), ("ff", b"\x0c"), ("esc", b"\x1b"),
                   ("del", b"\x7f")]:
    bad(f"value_ctl_{name}", head(fields=b"X-A: a" + byte + b"b\r\n"), 400, rfc="9110 5.5 (CTL in field value)")
bad("nul_in_name", head(fields=b"X-\x00A: v\r\n"), 400, rfc="9110 5.1")

# --- rejected: field syntax (RFC 9112 section 5) ---------------------------------------

bad("space_before_colon", head(fields=b"X-A : v\r\n"), 400, rfc="9112 5.1 (MUST 400)")
bad("tab_before_colon", head(fields=b"X-A\t: v\r\n"), 400, rfc="9112 5.1 (MUST 400)")
bad("space_before_colon_content_length", head(b"POST / HTTP/1.1", b"Content-Length : 5\r\n") + b"hello", 400,
    rfc="9112 5.1, 11.2")
bad("space_before_colon_transfer_encoding", head(b"POST / HTTP/1.1", b"Transfer-Encoding : chunked\r\n") +
    b"0\r\n\r\n", 400, rfc="9112 5.1, 11.2")
bad("field_without_colon", head(fields=b"X-A v\r\n"), 400, rfc="9112 5")
bad("empty_field_name", head(fields=b": v\r\n"), 400, rfc="9110 5.1")
for name, field_name in [("space", b"X A"), ("paren", b"X(A)"), ("slash", b"X/A"), ("at", b"X@A"),
                         ("quote", b'X"A'), ("brace", b"X{A}"), ("high_byte", b"X\xe9")]:
    bad(f"name_{name}", head(fields=field_name + b": v\r\n"), 400, rfc="9110 5.1 (field-name = token)")
bad("obs_fold_space", head(fields=b"X-A: a\r\n b\r\n"), 400, rfc="9112 5.2 (MAY reject; m0 rejects)")
bad("obs_fold_tab", head(fields=b"X-A: a\r\n\tb\r\n"), 400, rfc="9112 5.2")
bad("obs_fold_content_length", head(b"POST / HTTP/1.1", b"Content-Length:\r\n 5\r\n") + b"hello", 400,
    rfc="9112 5.2")
bad("whitespace_before_first_field", b"GET / HTTP/1.1\r\n Host: example.com\r\n\r\n", 400,
    rfc="9112 2.2 (MUST reject or ignore; m0 rejects)")
bad("whitespace_only_line", head(fields=b" \r\n"), 400, rfc="9112 5.2")

# --- rejected: Host (RFC 9112 section 3.2) ---------------------------------------------

bad("host_missing", b"GET / HTTP/1.1\r\n\r\n", 400, rfc="9112 3.2 (MUST 400)")
bad("host_missing_other_fields", b"GET / HTTP/1.1\r\nX-A: 1\r\n\r\n", 400, rfc="9112 3.2")
bad("host_twice_identical", head(fields=HOST), 400, rfc="9112 3.2 (MUST 400)")
bad("host_twice_differing", head(fields=b"Host: other.example\r\n"), 400, rfc="9112 3.2")
bad("host_twice_name_case", head(fields=b"host: example.com\r\n"), 400, rfc="9112 3.2")
bad("host_twice_http10", b"GET / HTTP/1.0\r\nHost: a.example\r\nHost: b.example\r\n\r\n", 400, rfc="9112 3.2")
for name, value in [("space", b"exa mple.com"), ("userinfo", b"user@example.com"),
                    ("list_with_space", b"a.example, b.example"), ("bad_port", b"example.com:abc"),
                    ("slash", b"example.com/x")]:
    bad(f"host_invalid_{name}", b"GET / HTTP/1.1\r\nHost: " + value + b"\r\n\r\n", 400,
        rfc="9112 3.2 (invalid Host value: MUST 400)")

# --- rejected: limits ------------------------------------------------------------------

bad("too_many_fields", head(fields=b"".join(b"X-%d: v\r\n" % i for i in range(20))), 431, config="small",
    rfc="6585 5")
bad("too_many_fields_default", head(fields=b"".join(b"X-%d: v\r\n" % i for i in range(150))), 431, rfc="6585 5")
bad("field_too_large", head(fields=b"X-A: " + b"v" * 400 + b"\r\n"), 431, config="small", rfc="6585 5")
bad("field_too_large_default", head(fields=b"X-A: " + b"v" * 9000 + b"\r\n"), 431, rfc="6585 5")
bad("head_too_large", head(fields=b"".join(b"X-%d: " % i + b"v" * 200 + b"\r\n" for i in range(8))), 431,
    config="small", rfc="6585 5")

# --- accepted, then rejected on the same connection ------------------------------------

bad("garbage_after_request_without_length", head(b"POST / HTTP/1.1") + b"hello\r\n\r\n", 400,
    after=[Parsed("POST", "/", H())], rfc="9112 6.3 item 7 (no length: no body)")
bad("bad_request_after_good_one", head(b"GET /1 HTTP/1.1") + b"GET /2 HTTP/1.1\r\n\r\n", 400,
    after=[get("/1")], rfc="9112 3.2, 9.3.2")
bad("bad_chunk_after_good_request", head(b"GET /1 HTTP/1.1") + chunked(b"zz\r\n"), 400,
    after=[get("/1")], rfc="9112 7.1, 9.3.2")

CASES_BY_NAME = {c.name: c for c in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names"
