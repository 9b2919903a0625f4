#define PY_SSIZE_T_CLEAN  // Py_BuildValue with y# / s#
#include "asgi_call.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <utility>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>

#include "asgi_channel.hpp"
#include "asgi_glue.hpp"

namespace m0::asgi {

namespace {

const std::vector<http::response_header> error_headers = {{"Content-Type", "text/plain; charset=utf-8"}};

// Sets the future's result (None when `value` is null) unless it is done
// (cancelled), and drops it.
void resolve(PyObject*& future, PyObject* value = nullptr) {
    if (!future) return;
    python::py_ref done(PyObject_CallMethod(future, "done", nullptr));
    if (done && !PyObject_IsTrue(done.get())) {
        python::py_ref r(PyObject_CallMethod(future, "set_result", "(O)", value ? value : Py_None));
    }
    if (PyErr_Occurred()) PyErr_Clear();  // a cancelled future: nothing to wake
    Py_CLEAR(future);
}

bool is_done(PyObject* future) {
    python::py_ref done(PyObject_CallMethod(future, "done", nullptr));
    if (!done) {
        PyErr_Clear();
        return true;
    }
    return PyObject_IsTrue(done.get()) != 0;
}

// Borrowed bytes of a bytes-like object; false with TypeError set.
bool bytes_view(PyObject* o, std::string_view& out, const char* what) {
    if (PyBytes_Check(o)) {
        out = {PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o))};
        return true;
    }
    if (PyByteArray_Check(o)) {
        out = {PyByteArray_AS_STRING(o), static_cast<std::size_t>(PyByteArray_GET_SIZE(o))};
        return true;
    }
    PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.100s", what, Py_TYPE(o)->tp_name);
    return false;
}

bool set_item(PyObject* dict, const char* key, PyObject* owned) {
    if (!owned) return false;
    const int r = PyDict_SetItemString(dict, key, owned);
    Py_DECREF(owned);
    return r == 0;
}

PyObject* address(const std::string& host, unsigned short port) {
    return Py_BuildValue("(s#H)", host.data(), static_cast<Py_ssize_t>(host.size()), port);
}

}  // namespace

void flow::on_report(std::size_t drained, bool client_gone, std::size_t bound) {
    owed = drained > owed ? 0 : owed - drained;
    if (client_gone) on_gone();
    if (!alive) return;
    if (room && owed <= bound) release_room();
}

void flow::on_piece(boost::system::error_code ec, std::string chunk, bool last) {
    pulling = false;
    if (!alive) return;
    PyObject* result = nullptr;
    if (!ec) {
        result = Py_BuildValue("(y#O)", chunk.data(), static_cast<Py_ssize_t>(chunk.size()), last ? Py_True : Py_False);
        if (!result) PyErr_Clear();  // out of memory: the app sees a disconnect
    }
    if (!result) {
        // The engine answered already (413, 408, 400), the client left or
        // the response ended: nothing more of this request can be read or
        // answered.
        gone = true;
        Py_INCREF(Py_None);
        result = Py_None;
    }
    deliver_piece(result);
    if (gone) on_gone();
}

void flow::deliver_piece(PyObject* result) {
    if (piece && !is_done(piece)) {
        resolve(piece, result);
        Py_DECREF(result);
        return;
    }
    Py_CLEAR(piece);
    Py_XSETREF(stash, result);
}

void flow::on_gone() {
    gone = true;
    if (!alive) return;
    release_room();
    release_disconnect();
    if (piece) {
        Py_INCREF(Py_None);
        deliver_piece(Py_None);
    }
}

void flow::release_room() { resolve(room); }
void flow::release_disconnect() { resolve(disconnect); }

void flow::release_all() {
    alive = false;
    release_room();
    release_disconnect();
    resolve(piece);
    Py_CLEAR(stash);
}

asgi_call::asgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts)
    : app_(app), lane_(lane), ex_(std::move(ex)), req_(&ex_->req()), facts_(std::move(facts)) {}

asgi_call::~asgi_call() = default;

PyObject* asgi_call::build_scope() const {
    const http::request& req = *req_;
    python::py_ref scope(PyDict_New());
    if (!scope) return nullptr;
    PyObject* d = scope.get();
    python::py_ref headers(PyList_New(static_cast<Py_ssize_t>(req.headers.size())));
    if (!headers) return nullptr;
    for (std::size_t i = 0; i < req.headers.size(); ++i) {
        std::string name(req.headers[i].name);
        for (char& c : name)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        PyObject* pair = Py_BuildValue("(y#y#)", name.data(), static_cast<Py_ssize_t>(name.size()),
                                       req.headers[i].value.data(),
                                       static_cast<Py_ssize_t>(req.headers[i].value.size()));
        if (!pair) return nullptr;
        PyList_SET_ITEM(headers.get(), static_cast<Py_ssize_t>(i), pair);
    }
    const bool ok =
        set_item(d, "type", PyUnicode_FromString("http")) &&
        set_item(d, "asgi", Py_BuildValue("{s:s,s:s}", "version", "3.0", "spec_version", "2.4")) &&
        set_item(d, "http_version", PyUnicode_FromString(req.version == 10 ? "1.0" : "1.1")) &&
        set_item(d, "method", PyUnicode_FromStringAndSize(req.method.data(), static_cast<Py_ssize_t>(req.method.size()))) &&
        set_item(d, "scheme", PyUnicode_FromString("http")) &&
        set_item(d, "path", PyUnicode_DecodeUTF8(facts_.path.data(), static_cast<Py_ssize_t>(facts_.path.size()), "replace")) &&
        set_item(d, "raw_path", PyBytes_FromStringAndSize(req.path.data(), static_cast<Py_ssize_t>(req.path.size()))) &&
        set_item(d, "query_string", PyBytes_FromStringAndSize(req.query.data(), static_cast<Py_ssize_t>(req.query.size()))) &&
        // The mount's prefix (script_name); `path` keeps it, as the spec asks.
        set_item(d, "root_path", PyUnicode_DecodeUTF8(req.script_name.data(), static_cast<Py_ssize_t>(req.script_name.size()), "replace")) &&
        set_item(d, "headers", headers.release()) &&
        set_item(d, "client", address(facts_.client_host, facts_.client_port)) &&
        set_item(d, "server", address(facts_.server_host, facts_.server_port)) &&
        set_item(d, "extensions", Py_BuildValue("{s:{},s:{}}", "http.response.pathsend", "http.response.trailers"));
    return ok ? scope.release() : nullptr;
}

void asgi_call::run(completion_port& port) noexcept {
    port_ = &port;
    python::py_ref scope(build_scope());
    python::py_ref channel(new_channel(this));
    python::py_ref started;
    if (scope && channel)
        started = python::py_ref(
            PyObject_CallFunctionObjArgs(glue("spawn"), app_.callable.get(), scope.get(), channel.get(), nullptr));
    if (!started) {
        python::log_exception("asgi: " + app_.config.app + ": cannot start the request");
        if (channel) detach_channel(channel.get());
        post_error_response();
        flow_->alive = false;
        port.finish();
        return;
    }
    channel_ = channel.release();  // until the Task's done callback
}

void asgi_call::complete(bool cancelled) noexcept {
    // Cancelled: the executor stopped before the app saw the request.
    if (cancelled) ex_->respond(503, error_headers, "Service Unavailable\n");
}

PyObject* asgi_call::body() const {
    return PyBytes_FromStringAndSize(req_->body.data(), static_cast<Py_ssize_t>(req_->body.size()));
}

namespace {

// Reads an ASGI header list ([name, value] pairs of bytes) into `out`;
// `length` (if given) takes a content-length instead of `out`. False with
// a Python exception set on a malformed list or field.
bool read_fields(PyObject* fields, std::vector<http::response_header>& out, std::optional<std::uint64_t>* length) {
    python::py_ref it(PyObject_GetIter(fields));
    if (!it) return false;
    while (python::py_ref item{PyIter_Next(it.get())}) {
        python::py_ref seq(PySequence_Fast(item.get(), "each header must be a [name, value] pair"));
        if (!seq) return false;
        if (PySequence_Fast_GET_SIZE(seq.get()) != 2) {
            PyErr_SetString(PyExc_ValueError, "each header must be a [name, value] pair");
            return false;
        }
        std::string_view name, value;
        if (!bytes_view(PySequence_Fast_GET_ITEM(seq.get(), 0), name, "a header name") ||
            !bytes_view(PySequence_Fast_GET_ITEM(seq.get(), 1), value, "a header value"))
            return false;
        if (!http::is_token(name)) {
            PyErr_Format(PyExc_ValueError, "invalid header name %R", PySequence_Fast_GET_ITEM(seq.get(), 0));
            return false;
        }
        if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
            PyErr_Format(PyExc_ValueError, "header %R has CR, LF or NUL in its value", PySequence_Fast_GET_ITEM(seq.get(), 0));
            return false;
        }
        if (length && http::ascii_iequals(name, "content-length")) {
            std::uint64_t n = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec != std::errc() || p != value.data() + value.size()) {
                PyErr_Format(PyExc_ValueError, "invalid content-length %R", PySequence_Fast_GET_ITEM(seq.get(), 1));
                return false;
            }
            *length = n;
            continue;  // the engine writes its own
        }
        out.push_back({std::string(name), std::string(value)});
    }
    return !PyErr_Occurred();
}

// The client announced it accepts trailer fields (RFC 9110 10.1.4).
bool accepts_trailers(const http::request& req) {
    for (const auto& h : req.headers) {
        if (!http::ascii_iequals(h.name, "te")) continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            const auto comma = v.find(',');
            std::string_view item = v.substr(0, comma);
            item = item.substr(0, item.find(';'));
            while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
            while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
            if (http::ascii_iequals(item, "trailers")) return true;
            if (comma == std::string_view::npos) break;
            v.remove_prefix(comma + 1);
        }
    }
    return false;
}

}  // namespace

bool asgi_call::start(PyObject* status, PyObject* headers, bool trailers) {
    if (!PyLong_Check(status)) {
        PyErr_Format(PyExc_TypeError, "http.response.start status must be an int, not %.100s", Py_TYPE(status)->tp_name);
        return false;
    }
    const long code = PyLong_AsLong(status);
    if (code < 200 || code > 999) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "http.response.start status %ld is not in 200..999", code);
        return false;
    }
    std::vector<http::response_header> out;
    std::optional<std::uint64_t> length;
    if (!read_fields(headers, out, &length)) return false;
    status_ = static_cast<unsigned>(code);
    headers_ = std::move(out);
    content_length_ = length;
    start_seen_ = true;
    expect_trailers_ = trailers;
    send_trailers_ = trailers && accepts_trailers(*req_);
    return true;
}

void asgi_call::post_write(std::string data) {
    const std::size_t n = data.size();
    flow_->owed += n;
    executor_lane* lane = &lane_;
    const std::size_t bound = app_.config.send_buffer;
    port_->post_fn([ex = ex_, f = flow_, lane, bound, n, data = std::move(data)]() mutable {
        ex->write(std::move(data));
        f->credit += n;
        if (f->armed) return;
        f->armed = true;
        std::weak_ptr<http::exchange> weak = ex;
        // Room (or the client gone) is reported back to the loop, where
        // send() awaits it.
        ex->when_drained(bound, [f, weak, lane, bound] {
            f->armed = false;
            const std::size_t drained = std::exchange(f->credit, 0);
            auto e = weak.lock();
            const bool gone = !e || e->client_gone();
            lane->post_fn_to_job([f, drained, gone, bound] { f->on_report(drained, gone, bound); });
        });
    });
}

void asgi_call::post_end() {
    if (send_trailers_ && !trailers_.empty())
        port_->post_fn([ex = ex_, t = std::move(trailers_)]() mutable { ex->end_with_trailers(std::move(t)); });
    else
        port_->post_fn([ex = ex_] { ex->end(); });
    ended_ = true;
    flow_->release_disconnect();
}

void asgi_call::watch_client() {
    if (flow_->watching) return;
    flow_->watching = true;
    executor_lane* lane = &lane_;
    port_->post_fn([ex = ex_, f = flow_, lane] {
        ex->on_client_gone([f, lane] { lane->post_fn_to_job([f] { f->on_gone(); }); });
    });
}

int asgi_call::send(PyObject* data, bool more) {
    std::string_view body;
    if (!bytes_view(data, body, "http.response.body body")) return -1;
    // With trailers to come, the last body message does not end the response.
    const bool last = !more && !expect_trailers_;
    if (!begun_) {
        if (last) {
            port_->post_fn([ex = ex_, status = status_, headers = std::move(headers_), b = std::string(body)]() mutable {
                ex->respond(status, std::move(headers), std::move(b));
            });
            ended_ = true;
            flow_->release_disconnect();
            return 0;
        }
        port_->post_fn([ex = ex_, status = status_, headers = std::move(headers_), length = content_length_]() mutable {
            ex->begin(status, std::move(headers), length);
        });
        begun_ = true;
        // A streamed response learns of a client that left as soon as the
        // engine does, so the next send() raises.
        watch_client();
    }
    if (!body.empty()) post_write(std::string(body));
    if (last) {
        post_end();
        return 0;
    }
    return flow_->owed > app_.config.send_buffer && !flow_->gone ? 1 : 0;
}

bool asgi_call::trailers(PyObject* headers, bool more) {
    std::vector<http::response_header> fields;
    if (!read_fields(headers, fields, nullptr)) return false;
    for (auto& f : fields) trailers_.push_back(std::move(f));
    if (!more) post_end();
    return true;
}

void asgi_call::pull(PyObject* future) {
    flow& f = *flow_;
    if (f.stash) {
        PyObject* result = std::exchange(f.stash, nullptr);
        python::py_ref r(PyObject_CallMethod(future, "set_result", "(O)", result));
        Py_DECREF(result);
        if (!r) PyErr_Clear();
        return;
    }
    if (ended_ || f.gone) {
        python::py_ref r(PyObject_CallMethod(future, "set_result", "(O)", Py_None));
        if (!r) PyErr_Clear();
        return;
    }
    Py_INCREF(future);
    Py_XSETREF(f.piece, future);
    if (f.pulling) return;  // the piece already asked for goes to this future
    f.pulling = true;
    // A client that goes away ends the wait even if no pull reports it.
    watch_client();
    executor_lane* lane = &lane_;
    port_->post_fn([ex = ex_, fl = flow_, lane, max = app_.config.input_buffer] {
        ex->read_body(max, [fl, lane](boost::system::error_code ec, std::string chunk, bool last) {
            lane->post_fn_to_job([fl, ec, chunk = std::move(chunk), last]() mutable {
                fl->on_piece(ec, std::move(chunk), last);
            });
        });
    });
}

bool asgi_call::pathsend(PyObject* path) {
    PyObject* raw = nullptr;
    if (!PyUnicode_FSConverter(path, &raw)) return false;
    python::py_ref encoded(raw);
    const char* p = PyBytes_AS_STRING(encoded.get());
    if (p[0] != '/') {
        PyErr_Format(PyExc_ValueError, "http.response.pathsend path must be absolute, not %R", path);
        return false;
    }
    const int fd = ::open(p, O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const int err = fd < 0 ? errno : (S_ISREG(st.st_mode) ? errno : EISDIR);
        if (fd >= 0) ::close(fd);
        errno = err;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
        return false;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    // The file's size frames the response, whatever content-length said.
    port_->post_fn([ex = ex_, status = status_, headers = std::move(headers_), fd, size]() mutable {
        ex->begin(status, std::move(headers), size);
        if (size > 0)
            ex->write_file(fd, 0, size);  // the engine closes fd
        else
            ::close(fd);
        ex->end();
    });
    begun_ = true;
    ended_ = true;
    flow_->release_disconnect();
    return true;
}

void asgi_call::wait_room(PyObject* future) {
    Py_INCREF(future);
    Py_XSETREF(flow_->room, future);
    if (flow_->owed <= app_.config.send_buffer || flow_->gone) flow_->release_room();
}

bool asgi_call::wait_disconnect(PyObject* future) {
    if (ended_ || flow_->gone) return false;
    Py_INCREF(future);
    Py_XSETREF(flow_->disconnect, future);
    watch_client();
    return true;
}

void asgi_call::post_error_response() {
    port_->post_fn([ex = ex_] { ex->respond(500, error_headers, "Internal Server Error\n"); });
    ended_ = true;
}

void asgi_call::post_abort() {
    port_->post_fn([ex = ex_] { ex->abort(); });
    ended_ = true;
}

void asgi_call::fail(PyObject* message) {
    if (message && message != Py_None) {
        const char* text = PyUnicode_Check(message) ? PyUnicode_AsUTF8(message) : nullptr;
        if (!text) PyErr_Clear();
        log::error("asgi: " + app_.config.app + ": " + (text ? text : "error"));
    }
    if (ended_) return;
    if (!start_seen_)
        post_error_response();
    else
        post_abort();  // never a response that looks complete
    flow_->release_disconnect();
}

void asgi_call::on_task_done(PyObject* task) noexcept {
    // Cancelled at a hard stop, or an exception escaped the glue itself.
    if (!ended_) {
        log::warning("asgi: " + app_.config.app + ": request ended without a complete response");
        if (!start_seen_)
            post_error_response();
        else
            post_abort();
    }
    (void)task;
    flow_->release_all();
    PyObject* channel = std::exchange(channel_, nullptr);
    detach_channel(channel);
    Py_XDECREF(channel);
    completion_port* port = std::exchange(port_, nullptr);
    port->finish();  // the reactor may delete this job from now on
}

}  // namespace m0::asgi
