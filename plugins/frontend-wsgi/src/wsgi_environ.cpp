// environ construction: interned keys, a copy of a shared template, the
// request line, REMOTE_PORT and the body length set per request.
#include "wsgi_environ.hpp"

#include "wsgi_call.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <m0/listen_socket.hpp>
#include <m0/log.hpp>
#include <m0/python/log_stream.hpp>
#include <m0/version.hpp>

#include "environ_templates.hpp"
#include "wsgi_objects.hpp"

namespace m0::wsgi {
using python::py_ref;

namespace {

// A str reused while the bytes it was made from stay the same (the
// same Host, Accept, User-Agent on every request of a client).
class reused_str {
public:
    // New reference, or null with an exception set.
    PyObject* get(std::string_view v) {
        if (obj_ && v == last_) {
            Py_INCREF(obj_.get());
            return obj_.get();
        }
        PyObject* s = PyUnicode_DecodeLatin1(v.data(), static_cast<Py_ssize_t>(v.size()), nullptr);
        if (s && v.size() <= max_reused) {
            last_.assign(v);
            obj_ = py_ref::borrow(s);
        }
        return s;
    }

private:
    static constexpr std::size_t max_reused = 512;
    std::string last_;
    py_ref obj_;
};

struct header_key {
    py_ref key;      // "HTTP_USER_AGENT", "CONTENT_TYPE"; null: header not passed on
    reused_str value;
};

struct sv_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

PyObject* latin1(std::string_view v) {
    return PyUnicode_DecodeLatin1(v.data(), static_cast<Py_ssize_t>(v.size()), nullptr);
}

// Sets d[key] = value, stealing `value`; false (exception set) on error.
bool put_new(PyObject* d, PyObject* key, PyObject* value) {
    if (!value) return false;
    int rc = PyDict_SetItem(d, key, value);
    Py_DECREF(value);
    return rc == 0;
}

PyObject* intern(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);
    if (!o) throw std::runtime_error("wsgi: cannot create interned strings");
    return o;
}

}  // namespace

struct environ_builder::impl {
    // Keys a template or each request sets.
    py_ref k_method{intern("REQUEST_METHOD")}, k_path{intern("PATH_INFO")}, k_query{intern("QUERY_STRING")},
        k_protocol{intern("SERVER_PROTOCOL")}, k_server_name{intern("SERVER_NAME")},
        k_server_port{intern("SERVER_PORT")}, k_remote_addr{intern("REMOTE_ADDR")},
        k_remote_port{intern("REMOTE_PORT")}, k_content_length{intern("CONTENT_LENGTH")},
        k_input{intern("wsgi.input")}, k_uri{intern("RAW_URI")},
        k_script{intern("SCRIPT_NAME")}, k_url_scheme{intern("wsgi.url_scheme")}, k_https{intern("HTTPS")},
        k_cookie{intern("HTTP_COOKIE")};
    py_ref http10{intern("HTTP/1.0")}, http11{intern("HTTP/1.1")}, http2{intern("HTTP/2")}, empty{intern("")}, https{intern("https")},
        on{intern("on")};
    // mod_ssl's keys, set on TLS connections only (request::tls).
    py_ref k_ssl_protocol{intern("SSL_PROTOCOL")}, k_ssl_cipher{intern("SSL_CIPHER")},
        k_ssl_sni{intern("SSL_TLS_SNI")}, k_ssl_resumed{intern("SSL_SESSION_RESUMED")},
        k_ssl_verify{intern("SSL_CLIENT_VERIFY")}, k_ssl_client_dn{intern("SSL_CLIENT_S_DN")},
        k_ssl_client_cert{intern("SSL_CLIENT_CERT")}, k_ssl_server_cert{intern("SSL_SERVER_CERT")};
    py_ref tls12{intern("TLSv1.2")}, tls13{intern("TLSv1.3")}, verify_none{intern("NONE")},
        verify_success{intern("SUCCESS")}, initial{intern("Initial")}, resumed{intern("Resumed")};
    reused_str cipher;
    py_ref template_dict;  // the keys every request shares; the shared templates start from it
    environ_templates templates;
    reused_str method, path, script, query, content_length, uri;
    // REMOTE_PORT strings by port, one per slot: the ports of the
    // connections of the moment are found again.
    struct port_str {
        std::uint16_t port = 0;
        py_ref str;
    };
    std::array<port_str, 1024> remote_ports;

    // New reference to the str of `port`, or null with an exception set.
    PyObject* remote_port(std::uint16_t port) {
        port_str& slot = remote_ports[port % remote_ports.size()];
        if (!slot.str || slot.port != port) {
            char buf[8];
            const auto r = std::to_chars(buf, buf + sizeof buf, port);
            PyObject* s = PyUnicode_DecodeLatin1(buf, r.ptr - buf, nullptr);
            if (!s) return nullptr;
            slot.port = port;
            slot.str = py_ref(s);
        }
        return Py_NewRef(slot.str.get());
    }
    // Raw header name as sent → its environ key; bounded so that a client
    // inventing names cannot grow it without end.
    std::unordered_map<std::string, header_key, sv_hash, std::equal_to<>> headers;
    static constexpr std::size_t max_header_names = 256;

    // The SSL_* keys of a TLS connection on `d`: false with an exception set.
    // Per request, not in a template: templates are shared by connections
    // from the same address, whose TLS sessions differ.
    bool put_tls(PyObject* d, const tls_info& tls);

    // A template for `t`'s connection from `req`: false with an exception set.
    bool make_template(environ_template& t, const http::request& req, const request_facts& f);

    // Returns null when the header is not passed to the application.
    header_key* key_for(std::string_view name, header_key& scratch) {
        if (auto it = headers.find(name); it != headers.end()) return it->second.key ? &it->second : nullptr;
        header_key made;
        // Names with '_' are dropped: HTTP_X_USER would otherwise be
        // spoofable by sending X_User next to X-User (as gunicorn and nginx do).
        if (name.find('_') == std::string_view::npos) {
            std::string env;
            bool content = name.size() >= 12 && strncasecmp(name.data(), "content-", 8) == 0 &&
                           (name.size() == 12 || name.size() == 14) &&
                           (strncasecmp(name.data() + 8, "type", 4) == 0 ||
                            strncasecmp(name.data() + 8, "length", 6) == 0);
            if (!content) env = "HTTP_";
            for (char c : name) env += c == '-' ? '_' : static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
            PyObject* k = latin1(env);
            if (!k) return nullptr;
            PyUnicode_InternInPlace(&k);
            made.key = py_ref(k);
        }
        if (headers.size() < max_header_names) {
            auto [it, inserted] = headers.emplace(std::string(name), std::move(made));
            return it->second.key ? &it->second : nullptr;
        }
        scratch = std::move(made);
        return scratch.key ? &scratch : nullptr;
    }
};

environ_builder::environ_builder(const settings& s) : impl_(new impl) {
    PyObject* t = PyDict_New();
    if (!t) throw std::runtime_error("wsgi: cannot create the environ template");
    impl_->template_dict = py_ref(t);
    auto set = [t](const char* key, PyObject* value) {
        if (!value || PyDict_SetItem(t, py_ref(intern(key)).get(), value) < 0)
            throw std::runtime_error(std::string("wsgi: cannot prepare environ key ") + key);
        Py_DECREF(value);
    };
    set("wsgi.version", Py_BuildValue("(ii)", 1, 0));
    set("wsgi.url_scheme", intern("http"));
    set("wsgi.errors", python::new_log_stream(log::level::error));
    set("wsgi.multithread", Py_NewRef(Py_True));
    set("wsgi.multiprocess", Py_NewRef(s.multiprocess ? Py_True : Py_False));
    set("wsgi.run_once", Py_NewRef(Py_False));
    set("wsgi.input_terminated", Py_NewRef(Py_True));
    set("wsgi.file_wrapper", Py_NewRef(reinterpret_cast<PyObject*>(&file_wrapper_type)));
    // In the template rather than added per request: one more key would
    // cost an insert (and may be a resize) of every request's dict.
    set("m0.request_timeout", Py_XNewRef(request_timeout_callable()));
    set("SCRIPT_NAME", latin1(s.url_prefix));
    set("SERVER_SOFTWARE", PyUnicode_FromString("m0/" M0_VERSION_STRING));
    // Placeholders for the keys every request sets, so that setting them
    // replaces a value instead of inserting.
    for (PyObject* k : {impl_->k_method.get(), impl_->k_path.get(), impl_->k_query.get(), impl_->k_protocol.get(),
                        impl_->k_server_name.get(), impl_->k_server_port.get(), impl_->k_remote_addr.get(),
                        impl_->k_remote_port.get(), impl_->k_input.get(), impl_->k_uri.get()})
        if (PyDict_SetItem(t, k, impl_->empty.get()) < 0) throw std::runtime_error("wsgi: environ template");
}

environ_builder::~environ_builder() { delete impl_; }

bool environ_builder::impl::make_template(environ_template& t, const http::request& req,
                                          const request_facts& f) {
    t.dict = python::py_ref(PyDict_Copy(template_dict.get()));
    t.method = t.path = t.query = t.uri = nullptr;
    PyObject* d = t.dict.get();
    if (!d) return false;
    auto put = [d](PyObject* key, PyObject* value) { return put_new(d, key, value); };
    char port_buf[8];
    auto port_str = [&port_buf](std::uint16_t p) {
        auto r = std::to_chars(port_buf, port_buf + sizeof port_buf, p);
        return std::string_view(port_buf, static_cast<std::size_t>(r.ptr - port_buf));
    };
    // On a Unix socket: no client address (REMOTE_ADDR empty), and a server
    // with no address either: "localhost" and the scheme's port stand in
    // (the path does not fit the engine's endpoint; apps build URLs from Host).
    const bool unix_socket = is_unix_endpoint(req.local);
    const std::string remote_addr = is_unix_endpoint(req.remote) ? std::string() : req.remote.address().to_string();
    const std::string server_name = f.https ? f.server_name
                                    : unix_socket ? std::string("localhost")
                                                  : req.local.address().to_string();
    const std::uint16_t server_port = f.https ? f.server_port : unix_socket ? 80 : req.local.port();
    bool ok = put(k_method.get(), latin1(req.method)) && put(k_path.get(), latin1(f.path_info)) &&
              put(k_query.get(), latin1(req.query)) && put(k_uri.get(), latin1(req.target)) &&
              put(k_protocol.get(), Py_NewRef(req.version == 20 ? http2.get() : req.version == 10 ? http10.get() : http11.get())) &&
              put(k_server_name.get(), latin1(server_name)) && put(k_server_port.get(), latin1(port_str(server_port))) &&
              put(k_remote_addr.get(), latin1(remote_addr)) &&
              // Set per request (the template is shared by connections); a
              // proxy that names the client without its port: no REMOTE_PORT.
              (req.remote.port() || PyDict_DelItem(d, k_remote_port.get()) == 0) &&
              // On a TLS listener or behind a proxy that says the client used
              // TLS (the base holds "http").
              (!f.https || (put(k_url_scheme.get(), Py_NewRef(https.get())) && put(k_https.get(), Py_NewRef(on.get()))));
    t.content_length_header = false;
    header_key scratch;
    for (const auto& h : req.headers) {
        if (!ok) break;
        header_key* hk = key_for(h.name, scratch);
        if (!hk) {
            ok = !PyErr_Occurred();
            continue;
        }
        PyObject* key = hk->key.get();
        if (key == k_content_length.get()) {
            t.content_length_header = true;  // CONTENT_LENGTH is set per request
            continue;
        }
        PyObject* existing = PyDict_GetItemWithError(d, key);
        if (existing) {
            // Repeated header: one value, joined by "," (RFC 9110 5.3) as
            // gunicorn, wsgiref and Werkzeug join it, so that an app sees
            // the same string under any of them. Cookie pairs are joined by
            // "; " (RFC 6265 5.4, RFC 9113 8.2.3): a comma would glue two
            // cookies into one value.
            py_ref more(latin1(h.value));
            const char* format = key == k_cookie.get() ? "%U; %U" : "%U,%U";
            ok = more && put(key, PyUnicode_FromFormat(format, existing, more.get()));
        } else {
            ok = !PyErr_Occurred() && put(key, hk->value.get(h.value));
        }
    }
    if (!ok) {
        t.dict = python::py_ref();
        return false;
    }
    t.method = PyDict_GetItem(d, k_method.get());
    t.path = PyDict_GetItem(d, k_path.get());
    t.query = PyDict_GetItem(d, k_query.get());
    t.uri = PyDict_GetItem(d, k_uri.get());
    return true;
}

bool environ_builder::impl::put_tls(PyObject* d, const tls_info& tls) {
    auto put = [d](const py_ref& key, PyObject* value) { return put_new(d, key.get(), value); };
    // The versions a server may negotiate (tls.min_version is 1.2 at least).
    PyObject* protocol = tls.version == 0x0304 ? tls13.get() : tls.version == 0x0303 ? tls12.get() : nullptr;
    const bool client_cert = !tls.client_cert_chain.empty();
    // mod_ssl's values: NONE (no certificate), SUCCESS, FAILED:<why> (only
    // with tls.client_auth: optional does such a client get this far).
    py_ref verify(!client_cert                      ? Py_NewRef(verify_none.get())
                  : tls.client_verify_error.empty() ? Py_NewRef(verify_success.get())
                                                    : latin1("FAILED:" + tls.client_verify_error));
    return (!protocol || put(k_ssl_protocol, Py_NewRef(protocol))) &&
           put(k_ssl_cipher, cipher.get(tls.cipher_name)) &&
           (tls.server_name.empty() || put(k_ssl_sni, latin1(tls.server_name))) &&
           put(k_ssl_resumed, Py_NewRef(tls.resumed ? resumed.get() : initial.get())) &&
           put(k_ssl_verify, verify.release()) &&
           (!client_cert || (put(k_ssl_client_dn, latin1(tls.client_subject)) &&
                             put(k_ssl_client_cert, latin1(tls.client_cert_chain.front())))) &&
           (tls.server_cert.empty() || put(k_ssl_server_cert, latin1(tls.server_cert)));
}

PyObject* environ_builder::build(const http::request& req, const request_facts& f, PyObject* input) {
    impl& m = *impl_;
    environ_template& t = m.templates.slot_for(req, f);
    if (!t.dict && !m.make_template(t, req, f)) return nullptr;
    py_ref env(PyDict_Copy(t.dict.get()));
    if (!env) return nullptr;
    PyObject* d = env.get();
    // The request line: set only where it differs from the template's.
    auto line = [d](PyObject* key, PyObject* held, std::string_view v, reused_str& cache) {
        // An empty view may have no data pointer, which memcmp must not get.
        if (PyUnicode_GET_LENGTH(held) == static_cast<Py_ssize_t>(v.size()) &&
            (v.empty() || std::memcmp(PyUnicode_1BYTE_DATA(held), v.data(), v.size()) == 0))
            return true;
        return put_new(d, key, cache.get(v));
    };
    if (!line(m.k_method.get(), t.method, req.method, m.method) || !line(m.k_path.get(), t.path, f.path_info, m.path) ||
        !line(m.k_query.get(), t.query, req.query, m.query) || !line(m.k_uri.get(), t.uri, req.target, m.uri) ||
        !put_new(d, m.k_input.get(), Py_NewRef(input)))
        return nullptr;
    if (const std::uint16_t port = req.remote.port(); port && !put_new(d, m.k_remote_port.get(), m.remote_port(port)))
        return nullptr;
    // The base holds url_prefix; a mount's prefix comes with the request.
    if (!f.script_name.empty() && !put_new(d, m.k_script.get(), m.script.get(f.script_name))) return nullptr;
    if (req.tls && !m.put_tls(d, *req.tls)) return nullptr;
    const std::size_t whole_size = f.pulled_body ? f.pulled_body->size() : req.body.size();
    // The body the engine read; a streamed one as declared.
    const bool has_length = t.content_length_header ? !f.body_streamed || f.streamed_length.has_value()
                                                    : !f.body_streamed && whole_size != 0;
    if (has_length) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, f.body_streamed ? f.streamed_length.value_or(0) : whole_size);
        if (!put_new(d, m.k_content_length.get(), m.content_length.get(std::string_view(buf, r.ptr - buf)))) return nullptr;
    }
    // Last: t.method and the like point into the template.
    if (t.headers.bytes() > environ_templates::max_kept_header_bytes) t.dict = py_ref();
    return env.release();
}

}  // namespace m0::wsgi
