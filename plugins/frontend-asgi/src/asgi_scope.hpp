#pragma once
// Builds the ASGI http scope of a request on the loop thread. Every request
// builds one, so what does not change between requests is made once: the
// keys (interned), a template dict holding every key in order (a copy of it
// is a memcpy of its table, and setting a key that is already there never
// resizes), the constant values, and the last server and client addresses
// seen (the same on every request of a listener or a connection).
#include <Python.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include <m0/http.hpp>
#include <m0/python/ref.hpp>

namespace m0::asgi {

class scope_builder {
public:
    // GIL held. False with a Python exception set.
    bool init();
    // GIL held: drops every object (the frontend goes).
    void clear();

    // New reference to the scope of `req` whose decoded path is `path`, with
    // `state` (may be null) copied into scope["state"]; null with an
    // exception set. Loop thread, GIL held.
    PyObject* build(const http::request& req, std::string_view path, PyObject* state);
    // The same for a WebSocket handshake: the websocket scope (scheme "ws",
    // `subprotocols` from Sec-WebSocket-Protocol, no method).
    PyObject* build_websocket(const http::request& req, std::string_view path, PyObject* state);

private:
    // Sets the keys both scopes share on `d`, a copy of a template.
    bool fill(PyObject* d, const http::request& req, std::string_view path, PyObject* state,
              PyObject* extensions);
    // New reference to scope["headers"]: [(lower-cased name, value), ...].
    PyObject* headers_list(const std::vector<http::header_field>& fields);
    // New reference to the (name, value) pair of one field.
    PyObject* field_pair(const http::header_field& field);
    PyObject* address(const boost::asio::ip::tcp::endpoint& ep, boost::asio::ip::tcp::endpoint& last_ep,
                      python::py_ref& last_host, python::py_ref& last_tuple, bool keep_tuple);

    // {"http.response.pathsend": {}, "http.response.trailers": {}}, new: its
    // inner dicts are the app's too; with "tls" on a TLS connection.
    PyObject* extensions(const http::request& req) const;
    // The ASGI TLS extension's dict (server_cert, client_cert_chain,
    // client_cert_name, client_cert_error, tls_version, cipher_suite).
    PyObject* tls_extension(const tls_info& tls) const;

    python::py_ref template_, ws_template_, asgi_;
    python::py_ref k_subprotocols_, k_ws_response_;
    python::py_ref k_tls_, k_server_cert_, k_client_cert_chain_, k_client_cert_name_, k_client_cert_error_,
        k_tls_version_, k_cipher_suite_;
    python::py_ref k_pathsend_, k_trailers_, k_request_timeout_, k_asgi_, k_http_version_, k_method_, k_path_, k_raw_path_, k_query_string_, k_root_path_,
        k_headers_, k_client_, k_server_, k_extensions_, k_state_;
    python::py_ref v_http10_, v_http11_, v_http2_, v_get_, v_post_, k_scheme_, v_https_, v_wss_;
    // Server addresses repeat on every request of a listener, client hosts
    // on every request of a peer (ports differ per connection).
    boost::asio::ip::tcp::endpoint server_ep_, client_ep_;
    python::py_ref server_host_, server_tuple_, client_host_, client_tuple_;
    // Header fields repeat from request to request (Host, User-Agent,
    // Accept... on every request of a client), and a tuple of bytes is
    // immutable: the pair of a field seen before is shared, not made again.
    // Direct-mapped by a hash of the field as received; a miss replaces the
    // slot. Fields longer than the bounds (cookies, tokens) are not kept.
    struct field_slot {
        std::string name, value;
        python::py_ref pair;
    };
    static constexpr std::size_t field_slots = 128;
    static constexpr std::size_t max_kept_name = 64;
    static constexpr std::size_t max_kept_value = 192;
    std::array<field_slot, field_slots> fields_;
};

}  // namespace m0::asgi
