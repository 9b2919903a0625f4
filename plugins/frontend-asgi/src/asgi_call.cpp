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
#include <m0/python/ready_awaitable.hpp>

#include "asgi_channel.hpp"
#include "asgi_glue.hpp"

namespace m0::asgi {

namespace {

const std::vector<http::response_header> error_headers = {{"Content-Type", "text/plain; charset=utf-8"}};

void resolve(PyObject*& future) {
    if (!future) return;
    python::py_ref done(PyObject_CallMethod(future, "done", nullptr));
    if (done && !PyObject_IsTrue(done.get())) {
        python::py_ref r(PyObject_CallMethod(future, "set_result", "O", Py_None));
    }
    if (PyErr_Occurred()) PyErr_Clear();  // a cancelled future: nothing to wake
    Py_CLEAR(future);
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

PyObject* interned(const char* s) { return PyUnicode_InternFromString(s); }

// Interned names, made once (GIL held) and kept for the process.
struct names_t {
    PyObject* type = interned("type");
    PyObject* status = interned("status");
    PyObject* headers = interned("headers");
    PyObject* body = interned("body");
    PyObject* more_body = interned("more_body");
    PyObject* create_task = interned("create_task");
    PyObject* create_future = interned("create_future");
    PyObject* add_done_callback = interned("add_done_callback");
    PyObject* remove_done_callback = interned("remove_done_callback");
    PyObject* done = interned("done");
};

const names_t& names() {
    static const names_t n;
    return n;
}

// message[key] (required: KeyError when missing) or message.get(key,
// fallback) as a new reference; a dict is read without a method call.
PyObject* field(PyObject* message, PyObject* key, PyObject* fallback) {
    if (PyDict_CheckExact(message)) {
        PyObject* v = PyDict_GetItemWithError(message, key);
        if (v) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred()) return nullptr;
        if (!fallback) {
            PyErr_SetObject(PyExc_KeyError, key);
            return nullptr;
        }
        Py_INCREF(fallback);
        return fallback;
    }
    PyObject* v = PyObject_GetItem(message, key);
    if (v || !fallback || !PyErr_ExceptionMatches(PyExc_KeyError)) return v;
    PyErr_Clear();
    Py_INCREF(fallback);
    return fallback;
}

// The event loop of the calling loop thread (borrowed). A loop thread of
// the asyncio executor runs one loop for its whole life, so it is looked up
// once per thread: asyncio.get_running_loop() costs a getpid() each time.
PyObject* running_loop() {
    thread_local PyThreadState* seen_state = nullptr;
    thread_local PyObject* loop = nullptr;
    PyThreadState* state = PyThreadState_Get();
    if (state == seen_state && loop) return loop;
    python::py_ref asyncio(PyImport_ImportModule("asyncio"));
    python::py_ref found(asyncio ? PyObject_CallMethod(asyncio.get(), "get_running_loop", nullptr) : nullptr);
    if (!found) return nullptr;
    seen_state = state;
    loop = found.get();  // borrowed: its thread holds it while it runs
    return loop;
}

}  // namespace

void flow::on_report(std::size_t drained, bool client_gone, std::size_t bound) {
    owed = drained > owed ? 0 : owed - drained;
    if (client_gone) gone = true;
    if (!alive) return;
    if (room && (owed <= bound || gone)) release_room();
    if (gone) release_disconnect();
}

void flow::release_room() { resolve(room); }
void flow::release_disconnect() { resolve(disconnect); }

asgi_call::asgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts)
    : app_(app), lane_(lane), ex_(std::move(ex)), req_(&ex_->req()), facts_(std::move(facts)) {}

asgi_call::~asgi_call() = default;

// Borrowed: the lifespan state of this app on the running loop, or null.
PyObject* asgi_call::state() const {
    PyObject* loop = running_loop();
    if (!loop) return nullptr;
    python::py_ref key(PyTuple_Pack(2, loop, app_.id.get()));
    if (!key) return nullptr;
    return PyDict_GetItemWithError(glue("_states"), key.get());
}

void asgi_call::run(completion_port& port) noexcept {
    port_ = &port;
    const names_t& n = names();
    PyObject* loop = running_loop();
    PyObject* state = loop ? this->state() : nullptr;
    python::py_ref scope, channel, coro, task, on_done, added;
    if (loop && !PyErr_Occurred())
        scope = python::py_ref(app_.scope.build(*req_, facts_.decoded ? std::string_view(facts_.path) : req_->path, state));
    if (scope) channel = python::py_ref(new_channel(this));
    if (channel) {
        PyObject* args[] = {app_.callable.get(), scope.get(), channel.get()};
        coro = python::py_ref(PyObject_Vectorcall(glue("_serve"), args, 3, nullptr));
    }
    if (coro) task = python::py_ref(PyObject_CallMethodOneArg(loop, n.create_task, coro.get()));
    if (task) on_done = python::py_ref(PyObject_GetAttr(channel.get(), n.done));
    if (on_done) added = python::py_ref(PyObject_CallMethodOneArg(task.get(), n.add_done_callback, on_done.get()));
    if (!added) {
        python::log_exception("asgi: " + app_.config.app + ": cannot start the request");
        if (channel) detach_channel(channel.get());
        if (task) python::py_ref(PyObject_CallMethod(task.get(), "cancel", nullptr));
        PyErr_Clear();
        post_error_response();
        flow_->alive = false;
        port.finish();
        return;
    }
    channel_ = channel.release();  // until the Task's done callback
    task_ = task.release();
    on_done_ = on_done.release();
}

void asgi_call::complete(bool cancelled) noexcept {
    // Cancelled: the executor stopped before the app saw the request.
    if (cancelled) ex_->respond(503, error_headers, "Service Unavailable\n");
}

PyObject* asgi_call::send_message(PyObject* channel, PyObject* message) {
    const names_t& n = names();
    python::py_ref kind(field(message, n.type, nullptr));
    if (!kind) return nullptr;
    Py_ssize_t size = 0;
    const char* chars = PyUnicode_Check(kind.get()) ? PyUnicode_AsUTF8AndSize(kind.get(), &size) : nullptr;
    if (!chars) PyErr_Clear();  // not a str: _send_other says what is wrong
    const std::string_view k(chars ? chars : "", static_cast<std::size_t>(size));
    if (k == "http.response.start") {
        if (start_seen_) {
            PyErr_SetString(PyExc_RuntimeError, "http.response.start sent twice");
            return nullptr;
        }
        python::py_ref status(field(message, n.status, nullptr));
        static PyObject* const no_headers = PyTuple_New(0);
        python::py_ref headers(status ? field(message, n.headers, no_headers) : nullptr);
        if (!headers || !start(status.get(), headers.get())) return nullptr;
        return python::ready_none();
    }
    if (k == "http.response.body") {
        if (!start_seen_) {
            PyErr_SetString(PyExc_RuntimeError, "http.response.body sent before http.response.start");
            return nullptr;
        }
        if (ended_) {
            PyErr_SetString(PyExc_RuntimeError, "http.response.body sent after the response was complete");
            return nullptr;
        }
        if (flow_->gone) {
            PyErr_SetString(PyExc_OSError, "the client disconnected");
            return nullptr;
        }
        python::py_ref more(field(message, n.more_body, Py_False));
        const int more_flag = more ? PyObject_IsTrue(more.get()) : -1;
        if (more_flag < 0) return nullptr;
        static PyObject* const empty = PyBytes_FromStringAndSize(nullptr, 0);
        python::py_ref data(field(message, n.body, empty));
        if (!data) return nullptr;
        const int wait = send(data.get(), more_flag != 0);
        if (wait < 0) return nullptr;
        if (wait == 0) return python::ready_none();
        PyObject* loop = running_loop();
        python::py_ref fut(loop ? PyObject_CallMethodNoArgs(loop, n.create_future) : nullptr);
        if (!fut) return nullptr;
        wait_room(fut.get());
        return fut.release();
    }
    return PyObject_CallFunctionObjArgs(glue("_send_other"), channel, message, nullptr);
}

PyObject* asgi_call::body() const {
    return PyBytes_FromStringAndSize(req_->body.data(), static_cast<Py_ssize_t>(req_->body.size()));
}

bool asgi_call::start(PyObject* status, PyObject* headers) {
    if (!PyLong_Check(status)) {
        PyErr_Format(PyExc_TypeError, "http.response.start status must be an int, not %.100s", Py_TYPE(status)->tp_name);
        return false;
    }
    const long code = PyLong_AsLong(status);
    if (code < 200 || code > 999) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "http.response.start status %ld is not in 200..999", code);
        return false;
    }
    python::py_ref it(PyObject_GetIter(headers));
    if (!it) return false;
    std::vector<http::response_header> out;
    std::optional<std::uint64_t> length;
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
        if (http::ascii_iequals(name, "content-length")) {
            std::uint64_t n = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
            if (ec != std::errc() || p != value.data() + value.size()) {
                PyErr_Format(PyExc_ValueError, "invalid content-length %R", PySequence_Fast_GET_ITEM(seq.get(), 1));
                return false;
            }
            length = n;
            continue;  // the engine writes its own
        }
        out.push_back({std::string(name), std::string(value)});
    }
    if (PyErr_Occurred()) return false;
    status_ = static_cast<unsigned>(code);
    headers_ = std::move(out);
    content_length_ = length;
    start_seen_ = true;
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

int asgi_call::send(PyObject* data, bool more) {
    std::string_view body;
    if (!bytes_view(data, body, "http.response.body body")) return -1;
    if (!begun_) {
        if (!more) {
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
    }
    if (!body.empty()) post_write(std::string(body));
    if (!more) {
        port_->post_fn([ex = ex_] { ex->end(); });
        ended_ = true;
        flow_->release_disconnect();
        return 0;
    }
    return flow_->owed > app_.config.send_buffer && !flow_->gone ? 1 : 0;
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

void asgi_call::on_serve_end() noexcept {
    // The coroutine's last step: the Task is as good as done. Its done
    // callback (there for a Task cancelled before it ever ran) would cost a
    // loop round per request; it goes, and the job finishes now.
    if (task_ && on_done_) {
        python::py_ref removed(PyObject_CallMethodOneArg(task_, names().remove_done_callback, on_done_));
        if (!removed) PyErr_Clear();  // then the callback runs, finds the channel detached and does nothing
    }
    on_task_done(task_);
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
    flow_->alive = false;
    flow_->release_room();
    flow_->release_disconnect();
    PyObject* channel = std::exchange(channel_, nullptr);
    detach_channel(channel);
    Py_XDECREF(channel);
    Py_CLEAR(task_);
    Py_CLEAR(on_done_);
    completion_port* port = std::exchange(port_, nullptr);
    port->finish();  // the reactor may delete this job from now on
}

}  // namespace m0::asgi
