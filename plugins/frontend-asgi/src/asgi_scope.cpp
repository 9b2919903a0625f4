#include "asgi_scope.hpp"

#include <functional>
#include <string>

#include <m0/listen_socket.hpp>

#include "asgi_fields.hpp"

namespace m0::asgi {

namespace {

bool intern(python::py_ref& out, const char* s) {
    out = python::py_ref(PyUnicode_InternFromString(s));
    return static_cast<bool>(out);
}

// dict[key] = owned, consuming `owned` (null: an error is already set). A
// key the dict already holds (from the template) never resizes it.
bool put(PyObject* dict, const python::py_ref& key, PyObject* owned) {
    if (!owned) return false;
    const int r = PyDict_SetItem(dict, key.get(), owned);
    Py_DECREF(owned);
    return r == 0;
}

PyObject* utf8(std::string_view s) {
    return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
}

PyObject* bytes(std::string_view s) { return PyBytes_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())); }

// A header name as ASGI wants it: lower-cased bytes, written in place.
PyObject* lower_bytes(std::string_view s) {
    PyObject* b = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(s.size()));
    if (!b) return nullptr;
    char* out = PyBytes_AS_STRING(b);
    for (char c : s) *out++ = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    return b;
}

// A new list of make(item) for every item (make: a new reference, or null
// with an error set, which ends the list).
template <class Items, class Make>
PyObject* new_list(const Items& items, Make make) {
    python::py_ref list(PyList_New(static_cast<Py_ssize_t>(items.size())));
    if (!list) return nullptr;
    for (std::size_t i = 0; i < items.size(); ++i) {
        PyObject* item = make(items[i]);
        if (!item) return nullptr;
        PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), item);
    }
    return list.release();
}

// A new (lower-cased name, value) pair.
PyObject* new_pair(const http::header_field& field) {
    python::py_ref name(lower_bytes(field.name));
    python::py_ref value(name ? bytes(field.value) : nullptr);
    return value ? PyTuple_Pack(2, name.get(), value.get()) : nullptr;
}

}  // namespace

bool scope_builder::init() {
    if (template_) return true;
    python::py_ref k_type, k_scheme, k_version, k_spec_version, v_http;
    if (!intern(k_type, "type") || !intern(k_asgi_, "asgi") || !intern(k_http_version_, "http_version") ||
        !intern(k_method_, "method") || !intern(k_scheme, "scheme") || !intern(k_path_, "path") ||
        !intern(k_raw_path_, "raw_path") || !intern(k_query_string_, "query_string") ||
        !intern(k_root_path_, "root_path") || !intern(k_headers_, "headers") || !intern(k_client_, "client") ||
        !intern(k_server_, "server") || !intern(k_extensions_, "extensions") || !intern(k_state_, "state") ||
        !intern(k_version, "version") || !intern(k_spec_version, "spec_version") || !intern(v_http, "http") ||
        !intern(v_http10_, "1.0") || !intern(v_http11_, "1.1") || !intern(v_http2_, "2") || !intern(v_get_, "GET") || !intern(v_post_, "POST") ||
        !intern(v_https_, "https"))
        return false;
    k_scheme_ = k_scheme;
    // The TLS extension's keys (asgiref specs/tls.rst), used on TLS connections only.
    if (!intern(k_tls_, "tls") || !intern(k_server_cert_, "server_cert") ||
        !intern(k_client_cert_chain_, "client_cert_chain") || !intern(k_client_cert_name_, "client_cert_name") ||
        !intern(k_client_cert_error_, "client_cert_error") || !intern(k_tls_version_, "tls_version") ||
        !intern(k_cipher_suite_, "cipher_suite"))
        return false;
    // The nested dicts are copied per request: an application may change
    // its scope, and no change may reach the next request.
    asgi_ = python::py_ref(PyDict_New());
    // The HTTP & WebSocket spec's latest version, 2.5: every addition up to
    // it is served (headers in websocket.accept 2.1, the close reason 2.3,
    // send() raising OSError once the client is gone 2.4, the disconnect
    // reason 2.5).
    python::py_ref v3(PyUnicode_FromString("3.0")), v25(PyUnicode_FromString("2.5"));
    if (!asgi_ || !v3 || !v25 || !intern(k_pathsend_, "http.response.pathsend") ||
        !intern(k_trailers_, "http.response.trailers") || !intern(k_request_timeout_, "m0.request_timeout") ||
        PyDict_SetItem(asgi_.get(), k_version.get(), v3.get()) ||
        PyDict_SetItem(asgi_.get(), k_spec_version.get(), v25.get()))
        return false;
    python::py_ref t(PyDict_New());
    if (!t) return false;
    // Every key, in the order the scope had when it was built key by key.
    const python::py_ref* keys[] = {&k_type,        &k_asgi_,      &k_http_version_, &k_method_,
                                    &k_scheme,      &k_path_,      &k_raw_path_,     &k_query_string_,
                                    &k_root_path_,  &k_headers_,   &k_client_,       &k_server_,
                                    &k_extensions_, &k_state_};
    for (const auto* k : keys)
        if (PyDict_SetItem(t.get(), k->get(), Py_None)) return false;
    if (PyDict_SetItem(t.get(), k_type.get(), v_http.get()) || PyDict_SetItem(t.get(), k_scheme.get(), v_http.get()))
        return false;
    template_ = t;
    // The websocket scope's keys in the order the spec lists them.
    python::py_ref w(PyDict_New()), v_websocket, v_ws;
    if (!w || !intern(k_subprotocols_, "subprotocols") || !intern(k_ws_response_, "websocket.http.response") ||
        !intern(v_websocket, "websocket") || !intern(v_ws, "ws") || !intern(v_wss_, "wss"))
        return false;
    const python::py_ref* ws_keys[] = {&k_type,         &k_asgi_,    &k_http_version_, &k_scheme,
                                       &k_path_,        &k_raw_path_, &k_query_string_, &k_root_path_,
                                       &k_headers_,     &k_client_,  &k_server_,       &k_subprotocols_,
                                       &k_extensions_,  &k_state_};
    for (const auto* k : ws_keys)
        if (PyDict_SetItem(w.get(), k->get(), Py_None)) return false;
    if (PyDict_SetItem(w.get(), k_type.get(), v_websocket.get()) || PyDict_SetItem(w.get(), k_scheme.get(), v_ws.get()))
        return false;
    ws_template_ = w;
    return true;
}

void scope_builder::clear() { *this = scope_builder(); }

PyObject* scope_builder::field_pair(const http::header_field& field) {
    if (field.name.size() > max_kept_name || field.value.size() > max_kept_value) return new_pair(field);
    const std::size_t hash = std::hash<std::string_view>{}(field.name) * 31 + std::hash<std::string_view>{}(field.value);
    field_slot& slot = fields_[hash % field_slots];
    if (slot.pair && slot.name == field.name && slot.value == field.value) return python::py_ref(slot.pair).release();
    PyObject* pair = new_pair(field);
    if (!pair) return nullptr;
    slot.name.assign(field.name);
    slot.value.assign(field.value);
    slot.pair = python::py_ref::borrow(pair);
    return pair;
}

PyObject* scope_builder::headers_list(const std::vector<http::header_field>& fields) {
    return new_list(fields, [this](const http::header_field& field) { return field_pair(field); });
}

PyObject* scope_builder::address(const boost::asio::ip::tcp::endpoint& ep, boost::asio::ip::tcp::endpoint& last_ep,
                                 python::py_ref& last_host, python::py_ref& last_tuple, bool keep_tuple) {
    // A Unix socket's client and server: None, as uvicorn gives them.
    if (is_unix_endpoint(ep)) return Py_NewRef(Py_None);
    if (last_tuple && ep == last_ep) return python::py_ref(last_tuple).release();
    if (!last_host || ep.address() != last_ep.address()) {
        const std::string host = ep.address().to_string();
        last_host = python::py_ref(PyUnicode_FromStringAndSize(host.data(), static_cast<Py_ssize_t>(host.size())));
        if (!last_host) return nullptr;
    }
    PyObject* port = PyLong_FromLong(ep.port());
    if (!port) return nullptr;
    PyObject* tuple = PyTuple_New(2);
    if (!tuple) {
        Py_DECREF(port);
        return nullptr;
    }
    PyTuple_SET_ITEM(tuple, 0, python::py_ref(last_host).release());
    PyTuple_SET_ITEM(tuple, 1, port);
    last_ep = ep;
    last_tuple = keep_tuple ? python::py_ref::borrow(tuple) : python::py_ref();
    return tuple;
}

bool scope_builder::fill(PyObject* d, const http::request& req, std::string_view path, PyObject* state,
                         PyObject* extensions) {
    return put(d, k_asgi_, PyDict_Copy(asgi_.get())) &&
           put(d, k_http_version_, python::py_ref(req.version == 20 ? v_http2_ : req.version == 10 ? v_http10_ : v_http11_).release()) &&
           put(d, k_path_, utf8(path)) && put(d, k_raw_path_, bytes(req.path)) &&
           put(d, k_query_string_, bytes(req.query)) &&
           // The mount's prefix (script_name); `path` keeps it, as the spec asks.
           put(d, k_root_path_, utf8(req.script_name)) && put(d, k_headers_, headers_list(req.headers)) &&
           // A connection's client tuple is not kept: with many connections
           // interleaved it would rarely match; its host string does.
           put(d, k_client_, address(req.remote, client_ep_, client_host_, client_tuple_, false)) &&
           put(d, k_server_, address(req.local, server_ep_, server_host_, server_tuple_, true)) &&
           put(d, k_extensions_, extensions) &&
           put(d, k_state_, !state ? PyDict_New() : PyDict_Check(state) ? PyDict_Copy(state)
                                                                        : PyObject_CallOneArg(reinterpret_cast<PyObject*>(&PyDict_Type), state));
}

PyObject* scope_builder::build(const http::request& req, std::string_view path, PyObject* state) {
    python::py_ref scope(PyDict_Copy(template_.get()));
    if (!scope) return nullptr;
    PyObject* method = req.method == "GET"    ? python::py_ref(v_get_).release()
                       : req.method == "POST" ? python::py_ref(v_post_).release()
                                              : PyUnicode_FromStringAndSize(req.method.data(),
                                                                            static_cast<Py_ssize_t>(req.method.size()));
    // "https" on a TLS listener or behind a proxy that says the client used
    // TLS (the template holds "http").
    const bool ok = put(scope.get(), k_method_, method) &&
                    (req.scheme != "https" || put(scope.get(), k_scheme_, python::py_ref(v_https_).release())) &&
                    fill(scope.get(), req, path, state, extensions(req));
    return ok ? scope.release() : nullptr;
}

PyObject* scope_builder::build_websocket(const http::request& req, std::string_view path, PyObject* state) {
    python::py_ref scope(PyDict_Copy(ws_template_.get()));
    python::py_ref ext(scope ? PyDict_New() : nullptr);
    if (!ext || !put(ext.get(), k_ws_response_, PyDict_New()) ||
        (req.tls && !put(ext.get(), k_tls_, tls_extension(*req.tls))))
        return nullptr;
    // Every comma-separated token of every Sec-WebSocket-Protocol header, in order.
    python::py_ref subprotocols(PyList_New(0));
    if (!subprotocols) return nullptr;
    bool failed = any_list_item(req, "sec-websocket-protocol", [&](std::string_view item) {
        python::py_ref name(utf8(item));
        return !name || PyList_Append(subprotocols.get(), name.get()) != 0;
    });
    if (failed) return nullptr;
    const bool ok = put(scope.get(), k_subprotocols_, subprotocols.release()) &&
                    (req.scheme != "https" || put(scope.get(), k_scheme_, python::py_ref(v_wss_).release())) &&
                    fill(scope.get(), req, path, state, ext.release());
    return ok ? scope.release() : nullptr;
}

PyObject* scope_builder::extensions(const http::request& req) const {
    python::py_ref ext(PyDict_New());
    if (!ext || !put(ext.get(), k_pathsend_, PyDict_New()) || !put(ext.get(), k_trailers_, PyDict_New()) ||
        !put(ext.get(), k_request_timeout_, PyDict_New()) ||
        (req.tls && !put(ext.get(), k_tls_, tls_extension(*req.tls))))
        return nullptr;
    return ext.release();
}

// Made again for every request of a connection: the app may change the dict,
// and a cache keyed by the connection could outlive it (the next connection
// may get the same tls_info address). A handful of small objects, and only
// on TLS connections.
PyObject* scope_builder::tls_extension(const tls_info& tls) const {
    const auto& chain = tls.client_cert_chain;
    python::py_ref pems(new_list(chain, [](const std::string& pem) { return utf8(pem); }));
    if (!pems) return nullptr;
    // The spec's None: no server certificate known, no client certificate,
    // a client certificate that verified.
    auto text_or_none = [](bool none, std::string_view text) { return none ? Py_NewRef(Py_None) : utf8(text); };
    python::py_ref d(PyDict_New());
    if (!d || !put(d.get(), k_server_cert_, text_or_none(tls.server_cert.empty(), tls.server_cert)) ||
        !put(d.get(), k_client_cert_chain_, pems.release()) ||
        !put(d.get(), k_client_cert_name_, text_or_none(chain.empty(), tls.client_subject)) ||
        !put(d.get(), k_client_cert_error_, text_or_none(tls.client_verify_error.empty(), tls.client_verify_error)) ||
        !put(d.get(), k_tls_version_, PyLong_FromLong(tls.version)) ||
        !put(d.get(), k_cipher_suite_, PyLong_FromLong(tls.cipher_suite)))
        return nullptr;
    return d.release();
}

}  // namespace m0::asgi
