#include "asgi_call.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <utility>

#include <m0/log.hpp>
#include <m0/python/eager_task.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/ready_awaitable.hpp>
#include <m0/python/stuck_thread.hpp>

#include "asgi_channel.hpp"
#include "asgi_fields.hpp"
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

PyObject* interned(const char* s) { return PyUnicode_InternFromString(s); }

// Interned names, made once (GIL held) and kept for the process.
struct names_t {
    PyObject* type = interned("type");
    PyObject* status = interned("status");
    PyObject* headers = interned("headers");
    PyObject* body = interned("body");
    PyObject* more_body = interned("more_body");
    PyObject* seconds = interned("seconds");
    PyObject* trailers = interned("trailers");
    PyObject* more_trailers = interned("more_trailers");
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

}  // namespace

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

PyObject* lifespan_state(const application& app) {
    PyObject* loop = running_loop();
    if (!loop) return nullptr;
    return PyDict_GetItemWithError(app.states.get(), loop);
}

void flow::on_report(std::size_t drained, bool client_gone, std::size_t bound) {
    owed = drained > owed ? 0 : owed - drained;
    if (client_gone) on_gone();
    if (!alive) return;
    if (room && owed <= bound) release_room();
}

void flow::on_piece(boost::system::error_code ec, std::string chunk, bool last) {
    pulling = false;
    if (deadline) deadline->waiting_on_server(false);
    if (!alive) return;
    PyObject* result = nullptr;
    if (!ec) {
        python::py_ref bytes(PyBytes_FromStringAndSize(chunk.data(), static_cast<Py_ssize_t>(chunk.size())));
        result = bytes ? PyTuple_Pack(2, bytes.get(), last ? Py_True : Py_False) : nullptr;
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

void flow::on_peer_eof() {
    peer_eof = true;
    if (alive) release_disconnect();
}

void flow::release_room() {
    if (room && deadline) deadline->waiting_on_server(false);
    resolve(room);
}
void flow::release_disconnect() { resolve(disconnect); }

void flow::release_all() {
    alive = false;
    task = nullptr;
    release_room();
    release_disconnect();
    resolve(piece);
    Py_CLEAR(stash);
}

asgi_call::asgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
                     std::shared_ptr<request_deadline> deadline)
    : app_(app), lane_(lane), ex_(std::move(ex)), req_(&ex_->req()), facts_(std::move(facts)) {
    flow_->deadline = std::move(deadline);
}

namespace {

// How long the watchdog waits for the GIL to read a Task's await chain
// before it calls the interpreter wedged: far longer than the switch
// interval (5 ms) at which a thread running Python gives it up.
constexpr std::chrono::milliseconds gil_probe_wait{2000};

// GIL held: the Task's await chain, outermost first: its coroutine, then
// what each awaits (cr_await; gi_yieldfrom for a generator-based one) down
// to the innermost coroutine, whose line is where it is now.
std::string await_chain(PyObject* task) {
    std::string out;
    python::py_ref awaitable(PyObject_CallMethod(task, "get_coro", nullptr));
    for (int depth = 0; awaitable && awaitable.get() != Py_None && depth < 64; ++depth) {
        python::py_ref frame(PyObject_GetAttrString(awaitable.get(), "cr_frame"));
        const char* next = "cr_await";
        if (!frame) {
            PyErr_Clear();
            frame = python::py_ref(PyObject_GetAttrString(awaitable.get(), "gi_frame"));
            next = "gi_yieldfrom";
        }
        if (!frame) break;  // a Future, or another awaitable: the chain ends here
        if (frame.get() != Py_None) {
            auto* f = reinterpret_cast<PyFrameObject*>(frame.get());
            python::py_ref code(reinterpret_cast<PyObject*>(PyFrame_GetCode(f)));
            auto* c = reinterpret_cast<PyCodeObject*>(code.get());
            const char* file = PyUnicode_AsUTF8(c->co_filename);
            const char* name = PyUnicode_AsUTF8(c->co_name);
            if (file && name)
                out += std::string(out.empty() ? "" : "\n") + "  File \"" + file + "\", line " +
                       std::to_string(PyFrame_GetLineNumber(f)) + " in " + name;
        }
        awaitable = python::py_ref(PyObject_GetAttrString(awaitable.get(), next));
    }
    PyErr_Clear();
    return out;
}

}  // namespace

void asgi_call::start_deadline(PyObject* loop_thread_state) {
    if (!flow_->deadline) return;
    auto* tstate = reinterpret_cast<PyThreadState*>(loop_thread_state);
    std::weak_ptr<flow> weak = flow_;
    // Where it is stuck: the Task's await chain, read with the GIL on a
    // thread of its own; if the GIL cannot be had, the loop thread's stack
    // read without it (code that never awaits holds the loop).
    auto where = [weak, tstate] {
        stuck_report r;
        auto chain = python::with_gil_within(gil_probe_wait, [weak]() -> std::string {
            auto f = weak.lock();
            const std::string chain = f && f->alive && f->task ? await_chain(f->task) : std::string();
            return chain.empty() ? chain : "the task awaits:\n" + chain;
        });
        if (!chain) {
            r.interpreter_wedged = true;
            const std::string stack = python::stack_of(tstate);
            r.where = "the event loop's thread (holding the GIL):\n" +
                      (stack.empty() ? std::string("(its stack cannot be read in this CPython without the GIL)") : stack);
        } else if (chain->empty()) {
            // No Task yet: its first step, run at once, has not returned
            // (code that never awaits), so the loop's thread is in it.
            std::string stack = python::stack_of(tstate);
            if (stack.empty()) {
                const unsigned long ident = tstate->thread_id;
                stack = python::with_gil_within(gil_probe_wait, [ident] { return python::stack_with_gil(ident); })
                            .value_or(std::string());
            }
            r.where = "the event loop's thread:\n" + stack;
        } else {
            r.where = std::move(*chain);
        }
        return r;
    };
    // At the deadline, once the core answered: CancelledError at the
    // Task's await, on the loop thread.
    executor_lane* lane = &lane_;
    auto stop = [weak, lane] {
        lane->post_fn_to_job([weak] {
            auto f = weak.lock();
            if (!f || !f->alive || !f->task) return;
            python::py_ref r(PyObject_CallMethod(f->task, "cancel", nullptr));
            if (!r) PyErr_Clear();
        });
    };
    flow_->deadline->started(std::move(where), std::move(stop));
}

PyObject* asgi_call::send_request_timeout(PyObject* message) {
    python::py_ref seconds(field(message, names().seconds, Py_None));
    if (!seconds) return nullptr;
    std::optional<std::chrono::nanoseconds> timeout;
    if (seconds.get() != Py_None) {
        const double s = PyFloat_AsDouble(seconds.get());
        if (s == -1.0 && PyErr_Occurred()) return nullptr;
        if (!(s >= 0) || s > 1e9) {
            PyErr_SetString(PyExc_ValueError, "m0.request_timeout: seconds must be a number >= 0 (0 or None: no deadline)");
            return nullptr;
        }
        timeout = std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
    }
    if (flow_->deadline) flow_->deadline->set_timeout(timeout);
    return python::ready_none();
}

asgi_call::~asgi_call() = default;

void asgi_call::run(completion_port& port) noexcept {
    port_ = &port;
    const names_t& n = names();
    PyObject* loop = running_loop();
    PyObject* state = loop ? lifespan_state(app_) : nullptr;
    python::py_ref scope, channel, coro, task, on_done, added;
    if (loop && !PyErr_Occurred())
        scope = python::py_ref(app_.scope.build(*req_, facts_.decoded ? std::string_view(facts_.path) : req_->path, state));
    if (scope) channel = python::py_ref(new_channel(this));
    if (channel) {
        PyObject* args[] = {app_.callable.get(), scope.get(), channel.get()};
        coro = python::py_ref(PyObject_Vectorcall(glue(glue_name::serve), args, 3, nullptr));
    }
    if (coro) {
        // The first step runs now: an app that answers without waiting on
        // anything ends this request inside it (its last step finishes the
        // job, on_serve_end), with no loop iteration of its own. The call
        // keeps the channel from here, as the request may end in the step.
        channel_ = Py_NewRef(channel.get());
        start_deadline(reinterpret_cast<PyObject*>(PyThreadState_Get()));
        task = python::py_ref(python::start_task_eagerly(loop, coro.get()));
        // Over: the job is finished, and the reactor may have freed `this`.
        if (channel_is_detached(channel.get())) return;
        flow_->task = task.get();
        if (!task) Py_CLEAR(channel_);
    }
    if (task) on_done = python::py_ref(PyObject_GetAttr(channel.get(), n.done));
    if (on_done) added = python::py_ref(PyObject_CallMethodOneArg(task.get(), n.add_done_callback, on_done.get()));
    if (!added) {
        python::log_exception("asgi: " + app_.config.app + ": cannot start the request");
        if (channel) detach_channel(channel.get());
        if (task) python::py_ref(PyObject_CallMethod(task.get(), "cancel", nullptr));
        PyErr_Clear();
        Py_CLEAR(channel_);
        post_error_response();
        flow_->alive = false;
        port.finish();
        return;
    }
    task_ = task.release();  // until the Task's done callback, with channel_
    on_done_ = on_done.release();
}

void asgi_call::complete(bool cancelled) noexcept {
    // Cancelled: the executor stopped before the app saw the request.
    if (cancelled) ex_->respond(503, error_headers, "Service Unavailable\n");
}

namespace {

// RuntimeError with `what`; null for the caller to return.
PyObject* app_error(const char* what) {
    PyErr_SetString(PyExc_RuntimeError, what);
    return nullptr;
}

// The exception send() raises once the client is gone: an OSError subclass
// (ASGI HTTP spec 2.4) the frontend does not log as the app's error.
PyObject* client_disconnected() {
    PyErr_SetString(glue(glue_name::client_disconnected), "the client disconnected");
    return nullptr;
}

// message[key] as a truth value (false when missing); -1 on an error.
int flag(PyObject* message, PyObject* key) {
    python::py_ref v(field(message, key, Py_False));
    return v ? PyObject_IsTrue(v.get()) : -1;
}

}  // namespace

PyObject* asgi_call::send_message(PyObject* channel, PyObject* message) {
    const names_t& n = names();
    python::py_ref kind(field(message, n.type, nullptr));
    if (!kind) return nullptr;
    Py_ssize_t size = 0;
    const char* chars = PyUnicode_Check(kind.get()) ? PyUnicode_AsUTF8AndSize(kind.get(), &size) : nullptr;
    if (!chars) PyErr_Clear();  // not a str: _send_other says what is wrong
    const std::string_view k(chars ? chars : "", static_cast<std::size_t>(size));
    if (k == "http.response.start") {
        if (start_seen_) return app_error("http.response.start sent twice");
        python::py_ref status(field(message, n.status, nullptr));
        static PyObject* const no_headers = PyTuple_New(0);
        python::py_ref headers(status ? field(message, n.headers, no_headers) : nullptr);
        const int trailers = headers ? flag(message, n.trailers) : -1;
        if (trailers < 0 || !start(status.get(), headers.get(), trailers != 0)) return nullptr;
        return python::ready_none();
    }
    if (k == "http.response.body") return send_body(message);
    if (k == "m0.request_timeout") return send_request_timeout(message);
    if (k == "http.response.trailers") return send_trailers(message);
    return PyObject_CallFunctionObjArgs(glue(glue_name::send_other), channel, message, nullptr);
}

PyObject* asgi_call::send_body(PyObject* message) {
    const names_t& n = names();
    if (!start_seen_) return app_error("http.response.body sent before http.response.start");
    if (body_complete_ || ended_) return app_error("http.response.body sent after the response body was complete");
    if (flow_->gone) return client_disconnected();
    const int more = flag(message, n.more_body);
    if (more < 0) return nullptr;
    static PyObject* const empty = PyBytes_FromStringAndSize(nullptr, 0);
    python::py_ref data(field(message, n.body, empty));
    if (!data) return nullptr;
    const int wait = send(data.get(), more != 0);
    if (wait < 0) return nullptr;
    body_complete_ = more == 0;
    if (wait == 0) return python::ready_none();
    PyObject* loop = running_loop();
    python::py_ref fut(loop ? PyObject_CallMethodNoArgs(loop, n.create_future) : nullptr);
    if (!fut) return nullptr;
    wait_room(fut.get());
    // A coroutine around the future, as send() returns otherwise: only
    // when the output is full, so its cost is off the common path.
    return PyObject_CallOneArg(glue(glue_name::await_room), fut.get());
}

PyObject* asgi_call::send_trailers(PyObject* message) {
    const names_t& n = names();
    if (!expect_trailers_)
        return app_error("http.response.trailers sent without trailers=True in http.response.start");
    if (!body_complete_) return app_error("http.response.trailers sent before the last http.response.body");
    if (ended_) return app_error("http.response.trailers sent after the response was complete");
    if (flow_->gone) return client_disconnected();
    static PyObject* const no_headers = PyTuple_New(0);
    python::py_ref headers(field(message, n.headers, no_headers));
    const int more = headers ? flag(message, n.more_trailers) : -1;
    if (more < 0 || !trailers(headers.get(), more != 0)) return nullptr;
    return python::ready_none();
}

PyObject* asgi_call::body() const {
    return PyBytes_FromStringAndSize(req_->body.data(), static_cast<Py_ssize_t>(req_->body.size()));
}

namespace {

// The client announced it accepts trailer fields (RFC 9110 10.1.4).
bool accepts_trailers(const http::request& req) {
    return any_list_item(req, "te", [](std::string_view item) {
        item = item.substr(0, item.find(';'));
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        return http::ascii_iequals(item, "trailers");
    });
}

}  // namespace

bool asgi_call::start(PyObject* status, PyObject* headers, bool trailers) {
    unsigned code = 0;
    if (!read_status(status, code, "http.response.start")) return false;
    std::vector<http::response_header> out;
    std::optional<std::uint64_t> length;
    if (!read_fields(headers, out, &length)) return false;
    status_ = code;
    headers_ = std::move(out);
    content_length_ = length;
    start_seen_ = true;
    expect_trailers_ = trailers;
    send_trailers_ = trailers && accepts_trailers(*req_);
    return true;
}

void asgi_call::end_response() {
    ended_ = true;
    if (flow_->deadline) flow_->deadline->finished();
}

void asgi_call::post_write(std::string data) {
    const std::size_t n = data.size();
    if (flow_->deadline) flow_->deadline->produced(false);
    flow_->owed += n;
    executor_lane* lane = &lane_;
    const std::size_t bound = app_.config.send_buffer;
    port_->post_fn([ex = ex_, f = flow_, lane, bound, n, data = std::move(data)]() mutable {
        ex->write(std::move(data));
        report_room(ex, f, lane, bound, n, [](const http::exchange& e) { return e.client_gone(); });
    });
}

void asgi_call::post_end() {
    if (send_trailers_ && !trailers_.empty())
        port_->post_fn([ex = ex_, t = std::move(trailers_)]() mutable { ex->end_with_trailers(std::move(t)); });
    else
        port_->post_fn([ex = ex_] { ex->end(); });
    end_response();
    flow_->release_disconnect();
}

void asgi_call::watch_client(bool fin) {
    const bool gone = !flow_->watching;
    fin = fin && !flow_->watching_eof;
    if (!gone && !fin) return;
    flow_->watching = true;
    flow_->watching_eof = flow_->watching_eof || fin;
    executor_lane* lane = &lane_;
    port_->post_fn([ex = ex_, f = flow_, lane, gone, fin] {
        if (gone) ex->on_client_gone([f, lane] { lane->post_fn_to_job([f] { f->on_gone(); }); });
        if (fin) ex->on_peer_eof([f, lane] { lane->post_fn_to_job([f] { f->on_peer_eof(); }); });
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
            if (flow_->deadline) flow_->deadline->produced(true);
            end_response();
            flow_->release_disconnect();
            return 0;
        }
        port_->post_fn([ex = ex_, status = status_, headers = std::move(headers_), length = content_length_]() mutable {
            ex->begin(status, std::move(headers), length);
        });
        begun_ = true;
        if (flow_->deadline) flow_->deadline->produced(true);
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
    // The client's pace, not the app's: not counted against its deadline.
    if (f.deadline) f.deadline->waiting_on_server(true);
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
    body_complete_ = true;
    end_response();
    flow_->release_disconnect();
    return true;
}

void asgi_call::wait_room(PyObject* future) {
    Py_INCREF(future);
    Py_XSETREF(flow_->room, future);
    // A slow reader's pace, not the app's: not counted against its deadline.
    if (flow_->deadline) flow_->deadline->waiting_on_server(true);
    if (flow_->owed <= app_.config.send_buffer || flow_->gone) flow_->release_room();
}

bool asgi_call::wait_disconnect(PyObject* future) {
    if (ended_ || disconnected()) return false;
    Py_INCREF(future);
    Py_XSETREF(flow_->disconnect, future);
    // The body is complete: a FIN now means the client has nothing more to
    // say, which the app hears as http.disconnect (as uvicorn and Granian
    // say it); its response is still written to the half-closed client.
    watch_client(true);
    return true;
}

void asgi_call::post_error_response() {
    port_->post_fn([ex = ex_] { ex->respond(500, error_headers, "Internal Server Error\n"); });
    end_response();
}

void asgi_call::post_abort() {
    port_->post_fn([ex = ex_] { ex->abort(); });
    end_response();
}

void asgi_call::fail(PyObject* message) {
    const bool logged = message && message != Py_None;
    if (logged) {
        const char* text = PyUnicode_Check(message) ? PyUnicode_AsUTF8(message) : nullptr;
        if (!text) PyErr_Clear();
        log::error("asgi: " + app_.config.app + ": " + (text ? text : "error"));
    }
    if (ended_) return;
    // An app told of a half-closed client's disconnect that returns without
    // answering chose not to: the connection closes without an answer
    // rather than with a 500 that blames the server.
    if (!start_seen_ && (logged || !flow_->peer_eof))
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
    if (flow_->deadline) flow_->deadline->finished();
    flow_->release_all();
    PyObject* channel = std::exchange(channel_, nullptr);
    detach_channel(channel);
    Py_XDECREF(channel);
    Py_CLEAR(task_);
    Py_CLEAR(on_done_);
    completion_port* port = std::exchange(port_, nullptr);
    port->finish();  // the reactor may delete this job from now on
}

}  // namespace m0::asgi
