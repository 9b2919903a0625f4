#pragma once
// Building the PEP 3333 environ: the hot Python part of every request.
// Keys are interned once; each request's environ is a copy (a flat memory
// copy in CPython) of a template shared by the requests with the same client
// address, server side and headers (environ_templates), which holds the
// constant keys, the client's, the server's and the headers' values; only
// the request line, REMOTE_PORT, wsgi.input, CONTENT_LENGTH and, on a TLS
// connection, the SSL_* keys are set per request.
#include <Python.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <m0/http.hpp>
#include <m0/python/ref.hpp>

#include "wsgi_settings.hpp"

namespace m0::wsgi {

// What the reactor prepared for the environ, so the GIL holder does no
// string formatting it can avoid.
struct request_facts {
    std::string path_info;    // percent-decoded, after the mount prefix and url_prefix
    std::string script_name;  // under a mount: its prefix + url_prefix; empty: url_prefix alone
    // REMOTE_ADDR/REMOTE_PORT are request::remote (no REMOTE_PORT when its
    // port is 0: a proxy gave the address alone), SERVER_NAME/SERVER_PORT
    // request::local, except with https: then the server the client named.
    bool https = false;             // wsgi.url_scheme "https" and HTTPS=on
    std::string server_name;        // with https only: from Host
    std::uint16_t server_port = 0;  // with https only
    // The body is streamed (not in request::body); its declared length when
    // it has a Content-Length, none when it is chunked.
    bool body_streamed = false;
    std::optional<std::uint64_t> streamed_length;
    // A chunked body the reactor pulled before submitting the job: all of
    // it when it fit in input_buffer (then not streamed), else the first
    // bytes of the stream.
    std::optional<std::string> pulled_body;
};

class environ_builder {
public:
    // GIL held. Throws std::runtime_error if Python objects cannot be made.
    explicit environ_builder(const settings& s);
    ~environ_builder();  // GIL held
    environ_builder(const environ_builder&) = delete;
    environ_builder& operator=(const environ_builder&) = delete;

    // New environ dict, or null with a Python exception set. GIL held.
    PyObject* build(const http::request& req, const request_facts& facts, PyObject* input);

private:
    struct impl;
    impl* impl_;
};

}  // namespace m0::wsgi
