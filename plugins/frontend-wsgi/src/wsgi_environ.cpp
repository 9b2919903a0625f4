// environ construction with interned keys and reused values.
#include "wsgi_environ.hpp"

#include <charconv>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <m0/log.hpp>
#include <m0/python/log_stream.hpp>
#include <m0/version.hpp>

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

PyObject* intern(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);
    if (!o) throw std::runtime_error("wsgi: cannot create interned strings");
    return o;
}

}  // namespace

struct environ_builder::impl {
    // Keys set per request.
    py_ref k_method{intern("REQUEST_METHOD")}, k_path{intern("PATH_INFO")}, k_query{intern("QUERY_STRING")},
        k_protocol{intern("SERVER_PROTOCOL")}, k_server_name{intern("SERVER_NAME")},
        k_server_port{intern("SERVER_PORT")}, k_remote_addr{intern("REMOTE_ADDR")},
        k_remote_port{intern("REMOTE_PORT")}, k_content_length{intern("CONTENT_LENGTH")},
        k_input{intern("wsgi.input")}, k_uri{intern("RAW_URI")},
        k_script{intern("SCRIPT_NAME")}, k_url_scheme{intern("wsgi.url_scheme")}, k_https{intern("HTTPS")};
    py_ref http10{intern("HTTP/1.0")}, http11{intern("HTTP/1.1")}, empty{intern("")}, https{intern("https")},
        on{intern("on")};
    py_ref template_dict;
    reused_str method, path, script, query, server_name, server_port, remote_addr, remote_port, content_length, uri;
    // Raw header name as sent → its environ key; bounded so that a client
    // inventing names cannot grow it without end.
    std::unordered_map<std::string, header_key, sv_hash, std::equal_to<>> headers;
    static constexpr std::size_t max_header_names = 256;

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
            PyObject* k = PyUnicode_DecodeLatin1(env.data(), static_cast<Py_ssize_t>(env.size()), nullptr);
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
    // Presized so that no per-request insertion resizes the copies.
    PyObject* t = _PyDict_NewPresized(40);
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
    set("SCRIPT_NAME", PyUnicode_DecodeLatin1(s.url_prefix.data(), static_cast<Py_ssize_t>(s.url_prefix.size()), nullptr));
    set("SERVER_SOFTWARE", PyUnicode_FromString("m0/" M0_VERSION_STRING));
    // Placeholders for the keys every request sets, so that setting them
    // replaces a value instead of inserting.
    for (PyObject* k : {impl_->k_method.get(), impl_->k_path.get(), impl_->k_query.get(), impl_->k_protocol.get(),
                        impl_->k_server_name.get(), impl_->k_server_port.get(), impl_->k_remote_addr.get(),
                        impl_->k_remote_port.get(), impl_->k_input.get(), impl_->k_uri.get()})
        if (PyDict_SetItem(t, k, impl_->empty.get()) < 0) throw std::runtime_error("wsgi: environ template");
}

environ_builder::~environ_builder() { delete impl_; }

PyObject* environ_builder::build(const http::request& req, const request_facts& f, PyObject* input) {
    impl& m = *impl_;
    py_ref env(PyDict_Copy(m.template_dict.get()));
    if (!env) return nullptr;
    PyObject* d = env.get();
    // Steals `value`; false on error.
    auto put = [d](PyObject* key, PyObject* value) {
        if (!value) return false;
        int rc = PyDict_SetItem(d, key, value);
        Py_DECREF(value);
        return rc == 0;
    };
    char port_buf[8];
    auto port_str = [&port_buf](std::uint16_t p) {
        auto r = std::to_chars(port_buf, port_buf + sizeof port_buf, p);
        return std::string_view(port_buf, static_cast<std::size_t>(r.ptr - port_buf));
    };
    if (!put(m.k_method.get(), m.method.get(req.method)) || !put(m.k_path.get(), m.path.get(f.path_info)) ||
        !put(m.k_query.get(), m.query.get(req.query)) || !put(m.k_uri.get(), m.uri.get(req.target)) ||
        !put(m.k_protocol.get(), Py_NewRef(req.version == 10 ? m.http10.get() : m.http11.get())) ||
        !put(m.k_server_name.get(), m.server_name.get(f.server_name)) ||
        !put(m.k_server_port.get(), m.server_port.get(port_str(f.server_port))) ||
        !put(m.k_remote_addr.get(), m.remote_addr.get(f.remote_addr)) ||
        // A proxy that names the client without its port: no REMOTE_PORT.
        !(f.remote_port ? put(m.k_remote_port.get(), m.remote_port.get(port_str(f.remote_port)))
                        : PyDict_DelItem(d, m.k_remote_port.get()) == 0) ||
        !put(m.k_input.get(), Py_NewRef(input)))
        return nullptr;
    // Behind a proxy that says the client used TLS (the template holds "http").
    if (f.https && (!put(m.k_url_scheme.get(), Py_NewRef(m.https.get())) || !put(m.k_https.get(), Py_NewRef(m.on.get()))))
        return nullptr;
    // The template holds url_prefix; a mount's prefix comes with the request.
    if (!f.script_name.empty() && !put(m.k_script.get(), m.script.get(f.script_name))) return nullptr;

    const std::size_t whole_size = f.pulled_body ? f.pulled_body->size() : req.body.size();
    bool has_length = !f.body_streamed && whole_size != 0;
    header_key scratch;
    for (const auto& h : req.headers) {
        header_key* hk = m.key_for(h.name, scratch);
        if (!hk) {
            if (PyErr_Occurred()) return nullptr;
            continue;
        }
        PyObject* key = hk->key.get();
        if (key == m.k_content_length.get()) {
            has_length = !f.body_streamed || f.streamed_length.has_value();  // set below
            continue;
        }
        PyObject* existing = PyDict_GetItemWithError(d, key);
        if (existing) {
            // Repeated header: one value, joined by ", " (RFC 9110 5.3).
            py_ref more(PyUnicode_DecodeLatin1(h.value.data(), static_cast<Py_ssize_t>(h.value.size()), nullptr));
            if (!more || !put(key, PyUnicode_FromFormat("%U, %U", existing, more.get()))) return nullptr;
        } else if (PyErr_Occurred() || !put(key, hk->value.get(h.value))) {
            return nullptr;
        }
    }
    if (has_length) {
        // The body the engine read; a streamed one as declared.
        std::string len = std::to_string(f.body_streamed ? f.streamed_length.value_or(0) : whole_size);
        if (!put(m.k_content_length.get(), m.content_length.get(len))) return nullptr;
    }
    return env.release();
}

}  // namespace m0::wsgi
