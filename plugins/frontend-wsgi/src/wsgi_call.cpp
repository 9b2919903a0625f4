// Running a WSGI application for one request and shaping its response:
// a sequence becomes one Content-Length response, an iterator streams
// (begin + write per chunk), a file_wrapper over a real file is sendfile'd.
#include "wsgi_call.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/stuck_thread.hpp>

#include "wsgi_hold.hpp"
#include "wsgi_objects.hpp"
#include "ws_dispatcher.hpp"

namespace m0::wsgi {
using python::py_ref;

void stream_link::on_written(std::size_t n) {
    bool gone_now = ex->client_gone();
    bool arm = false;
    {
        std::lock_guard lock(mutex);
        unwritten -= n;
        if (gone_now) {
            gone = true;
        } else if (!waiting_drain && ex->pending_bytes() > high_water) {
            waiting_drain = arm = true;
        }
    }
    if (arm) {
        // std::function needs a copyable callable: share the guard.
        auto guard = std::make_shared<room_guard>(shared_from_this());
        ex->when_drained(high_water / 2, [guard] {
            guard->ran = true;
            stream_link& self = *guard->link;
            {
                std::lock_guard lock(self.mutex);
                self.waiting_drain = false;
                if (self.ex->client_gone()) self.gone = true;
            }
            self.room.notify_all();
        });
    }
    room.notify_all();
}

bool stream_registry::add(stream_link* link) {
    std::lock_guard lock(mutex_);
    if (released_) return false;
    links_.insert(link);
    return true;
}

void stream_registry::remove(stream_link* link) noexcept {
    std::lock_guard lock(mutex_);
    links_.erase(link);
}

void stream_registry::release_all() {
    std::lock_guard lock(mutex_);
    released_ = true;
    for (stream_link* link : links_) link->abandon();
}

void stream_link::abandon() {
    {
        std::lock_guard lock(mutex);
        gone = true;
        waiting_drain = false;
    }
    room.notify_all();
}

namespace {
thread_local wsgi_call* running_call = nullptr;

// environ["m0.request_timeout"]: one function for every request; it acts on
// the request its thread runs.
PyObject* set_request_timeout(PyObject*, PyObject* seconds) {
    wsgi_call* call = wsgi_call::current();
    if (!call) {
        PyErr_SetString(PyExc_RuntimeError, "m0.request_timeout: call it from the view of the request it is for");
        return nullptr;
    }
    if (!call->set_request_timeout(seconds)) return nullptr;
    Py_RETURN_NONE;
}

PyMethodDef request_timeout_def = {
    "request_timeout", set_request_timeout, METH_O,
    "request_timeout(seconds): this request's deadline from now on, instead of server.request_timeout "
    "(None or 0: no deadline). Each piece of the response the view produces starts it again."};

}  // namespace

PyObject* request_timeout_callable() {
    static PyObject* fn = PyCFunction_New(&request_timeout_def, nullptr);
    return fn;
}

// How long the watchdog waits to see the GIL taken before it calls the
// interpreter wedged: far longer than the switch interval (5 ms) at which a
// thread running Python gives it up, even on a machine that is busy.
constexpr std::chrono::milliseconds gil_probe_wait{2000};

// Where a pool thread running the app is stuck, from the watchdog thread:
// its stack read without the GIL, and whether the GIL can be had at all.
stuck_report where_stuck(PyThreadState* tstate) {
    stuck_report r;
    // Without the GIL where this CPython allows it; else read with the GIL
    // on a probe thread (which also tells whether the GIL can be had).
    r.where = python::stack_of(tstate);
    const unsigned long ident = tstate->thread_id;
    const bool read_it = r.where.empty();
    auto with_gil = python::with_gil_within(gil_probe_wait, [ident, read_it] {
        return read_it ? python::stack_with_gil(ident) : std::string();
    });
    r.interpreter_wedged = !with_gil;
    if (with_gil && r.where.empty()) r.where = std::move(*with_gil);
    if (r.interpreter_wedged)
        r.where += r.where.empty() ? "(holding the GIL; its stack cannot be read in this CPython without it)"
                                   : "\n(holding the GIL)";
    return r;
}
wsgi_call::wsgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
                     std::shared_ptr<request_deadline> deadline, deadline_watch* deadlines)
    : app_(app), lane_(lane), ex_(std::move(ex)), req_(&ex_->req()), facts_(std::move(facts)),
      reactor_thread_(std::this_thread::get_id()), reactor_io_(&ex_->io()), deadline_(std::move(deadline)),
      deadlines_(deadlines), buffers_(response_buffers::take()) {}

wsgi_call* wsgi_call::current() noexcept { return running_call; }

bool wsgi_call::set_request_timeout(PyObject* seconds) {
    std::optional<std::chrono::nanoseconds> timeout;
    if (seconds != Py_None) {
        const double s = PyFloat_AsDouble(seconds);
        if (s == -1.0 && PyErr_Occurred()) return false;
        if (!(s >= 0) || s > 1e9) {
            PyErr_SetString(PyExc_ValueError, "m0.request_timeout: seconds must be a number >= 0 (0 or None: no deadline)");
            return false;
        }
        timeout = std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
    }
    if (deadline_) deadline_->set_timeout(timeout);
    return true;
}

wsgi_call::~wsgi_call() {
    if (file_fd_ >= 0) ::close(file_fd_);
    // The response's header list if it still has it (it was lent, not
    // moved), else the spare one start_response never took.
    if (head_.headers.capacity() > buffers_.spare_headers.capacity())
        buffers_.spare_headers = std::move(head_.headers);
    response_buffers::give_back(std::move(buffers_));
}

std::string wsgi_call::describe() const {
    return "wsgi: " + std::string(req_->method) + " " + std::string(req_->target);
}

void wsgi_call::fail(const char* what) {
    outcome_ = headers_sent_ ? outcome::abort : outcome::error;
    if (body_failure_escaped()) return;
    python::log_exception(describe() + ": " + what);
}

bool wsgi_call::body_failure_escaped() {
    if (!reader_) return false;
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (!reader_->client_failure_raised(value)) {
        PyErr_Restore(type, value, tb);
        return false;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    log::info(describe() + ": request body cut short: " + reader_->failure() + " (not an application error)");
    // The engine has answered (400, 413, 408) on the app's behalf, or the
    // connection is gone: nothing of the app's is sent.
    outcome_ = outcome::abort;
    return true;
}

void wsgi_call::run(completion_port& port) noexcept {
    port_ = &port;
    on_reactor_ = std::this_thread::get_id() == reactor_thread_;
    python::gil_scope gil;
    // The deadline ends with run(), before this thread can take another job
    // (the watchdog must never write off the thread for a later one).
    struct call_scope {
        explicit call_scope(wsgi_call* c) : call(c) { running_call = c; }
        ~call_scope() {
            running_call = nullptr;
            if (call->deadline_) call->deadline_->finished();
        }
        wsgi_call* call;
    } scope(this);
    if (deadline_) {
        PyThreadState* tstate = PyThreadState_Get();
        deadline_->started([tstate] { return where_stuck(tstate); });
    }
    const std::string* whole = &req_->body;
    if (facts_.body_streamed)
        reader_ = std::make_unique<body_reader>(ex_, port, app_.config.input_buffer,
                                                std::move(facts_.pulled_body).value_or(std::string()),
                                                facts_.streamed_length, deadline_.get());
    else if (facts_.pulled_body)
        whole = &*facts_.pulled_body;
    request_objects objects;
    if (!objects.acquire(this, whole->data(), whole->size(), reader_.get())) {
        fail("cannot create the request objects");
        objects.release();
        return;
    }
    writer_ = objects.writer();
    {
        py_ref environ(app_.environ->build(*req_, facts_, objects.input()));
        py_ref hold;
        if (environ && app_.hub) {
            hold = py_ref(make_hold_callable(this));
            if (!hold || PyDict_SetItemString(environ.get(), "m0.hold", hold.get()) != 0) environ = py_ref();
        }
        if (!environ) {
            fail("cannot build the environ");
        } else {
            PyObject* args[2] = {environ.get(), objects.start_response()};
            py_ref result(PyObject_Vectorcall(app_.callable.get(), args, 2, nullptr));
            if (!result) {
                fail("the application raised");
            } else if (hold_) {
                // The hold answers; the view's body is not sent, only its
                // extra headers (cookies) are kept.
                close_iterable(result.get());
                outcome_ = headers_sent_ ? outcome::abort : outcome::hold;
            } else {
                consume(result.get());
                close_iterable(result.get());
            }
        }
        detach_hold_callable(hold.get());
    }
    objects.release();
    writer_ = nullptr;
    reader_.reset();
}

void wsgi_call::consume(PyObject* result) {
    if (Py_IS_TYPE(result, &file_wrapper_type) && try_sendfile(result)) return;
    if (PyList_CheckExact(result) || PyTuple_CheckExact(result)) {
        consume_sequence(result);
        return;
    }
    consume_iterator(result);
}

bool wsgi_call::consume_sequence(PyObject* seq) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    std::size_t total = 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
        if (!PyBytes_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "the application's body contains %.100s, not bytes",
                         Py_TYPE(items[i])->tp_name);
            fail("bad response body");
            return false;
        }
        total += static_cast<std::size_t>(PyBytes_GET_SIZE(items[i]));
    }
    if (!headers_sent_) {
        if (!status_set_) {
            PyErr_SetString(PyExc_AssertionError, "the application returned without calling start_response()");
            fail("no response");
            return false;
        }
        // The whole body is known: one response with Content-Length.
        std::string& body = buffers_.body;
        body.reserve(total);
        for (Py_ssize_t i = 0; i < n; ++i)
            body.append(PyBytes_AS_STRING(items[i]), static_cast<std::size_t>(PyBytes_GET_SIZE(items[i])));
        if (head_.content_length && *head_.content_length < body.size()) body.resize(*head_.content_length);
        outcome_ = outcome::respond;
        return true;
    }
    // write() already started the response: the rest follows it.
    for (Py_ssize_t i = 0; i < n; ++i) {
        Py_ssize_t size = PyBytes_GET_SIZE(items[i]);
        if (size && !send_chunk(PyBytes_AS_STRING(items[i]), static_cast<std::size_t>(size))) break;
    }
    outcome_ = outcome::streamed;
    return true;
}

void wsgi_call::consume_iterator(PyObject* result) {
    py_ref it(PyObject_GetIter(result));
    if (!it) {
        fail("the application did not return an iterable");
        return;
    }
    bool whole = false;  // the body buffer already holds the declared Content-Length
    bool warned = false;
    for (;;) {
        if (stream_ && !wait_for_room()) break;  // the client is gone: stop producing
        py_ref item(PyIter_Next(it.get()));
        if (!item) {
            if (PyErr_Occurred()) {
                fail("the application's iterable raised");
                return;
            }
            break;
        }
        if (!PyBytes_Check(item.get())) {
            PyErr_Format(PyExc_TypeError, "the application yielded %.100s, not bytes", Py_TYPE(item.get())->tp_name);
            fail("bad response body");
            return;
        }
        auto size = static_cast<std::size_t>(PyBytes_GET_SIZE(item.get()));
        const char* data = PyBytes_AS_STRING(item.get());
        if (size == 0) continue;
        if (!status_set_) {
            PyErr_SetString(PyExc_AssertionError, "start_response() was not called before the first body chunk");
            fail("no response");
            return;
        }
        if (whole || (head_.content_length && sent_ + size > *head_.content_length)) {
            if (!warned) log::warning(describe() + ": body longer than its Content-Length; excess dropped");
            warned = true;
            if (whole) continue;
        }
        if (!headers_sent_ && head_.content_length && size >= *head_.content_length) {
            // The first chunk is the whole declared body (Django, Werkzeug):
            // answer with one write instead of a stream.
            buffers_.body.assign(data, static_cast<std::size_t>(*head_.content_length));
            whole = true;
            continue;
        }
        if (!send_chunk(data, size)) break;
    }
    if (whole || !headers_sent_) {
        if (!status_set_) {
            PyErr_SetString(PyExc_AssertionError, "the application never called start_response()");
            fail("no response");
            return;
        }
        outcome_ = outcome::respond;
        return;
    }
    outcome_ = outcome::streamed;
}

bool wsgi_call::try_sendfile(PyObject* wrapper) {
    auto* fw = reinterpret_cast<file_wrapper_object*>(wrapper);
    if (!status_set_ || headers_sent_) return false;
    py_ref fileno(PyObject_CallMethod(fw->filelike, "fileno", nullptr));
    long fd = fileno ? PyLong_AsLong(fileno.get()) : -1;
    if (fd < 0) {
        PyErr_Clear();  // not a real file: iterate it instead
        return false;
    }
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    // tell() rather than the descriptor's offset: a buffered file object may
    // have read ahead.
    long long offset = -1;
    py_ref pos(PyObject_CallMethod(fw->filelike, "tell", nullptr));
    if (pos) offset = PyLong_AsLongLong(pos.get());
    if (offset < 0) {
        PyErr_Clear();
        offset = lseek(static_cast<int>(fd), 0, SEEK_CUR);
        if (offset < 0) return false;
    }
    auto size = static_cast<std::uint64_t>(st.st_size);
    auto off = std::min(static_cast<std::uint64_t>(offset), size);
    std::uint64_t length = size - off;
    if (head_.content_length && *head_.content_length < length) length = *head_.content_length;
    int own = fcntl(static_cast<int>(fd), F_DUPFD_CLOEXEC, 0);
    if (own < 0) return false;
    file_fd_ = own;
    file_offset_ = off;
    file_length_ = length;
    outcome_ = outcome::file;
    return true;
}

bool wsgi_call::wait_for_room() {
    // Under the inline executor the app runs on the reactor: each chunk is
    // written as it is posted, but room is made by the reactor's loop,
    // which cannot run until the app returns; waiting would be forever.
    if (on_reactor_) return true;
    stream_link& s = *stream_;
    std::unique_lock lock(s.mutex);
    auto ready = [&s] { return s.gone || (s.unwritten <= s.high_water && !s.waiting_drain); };
    if (!ready()) {
        lock.unlock();
        // A slow reader's pace, not the app's: not counted against its deadline.
        if (deadline_) deadline_->waiting_on_server(true);
        {
            python::gil_release no_gil;
            lock.lock();
            s.room.wait(lock, ready);
            lock.unlock();  // before the GIL is taken back
        }
        if (deadline_) deadline_->waiting_on_server(false);
    } else {
        lock.unlock();
    }
    std::lock_guard again(s.mutex);
    return !s.gone;
}

bool wsgi_call::send_chunk(const char* data, std::size_t size) {
    if (!stream_) stream_ = std::make_shared<stream_link>(app_.streams, ex_, app_.config.stream_buffer);
    else if (!wait_for_room()) return false;
    if (head_.content_length) {
        std::uint64_t left = *head_.content_length - sent_;
        if (size > left) size = static_cast<std::size_t>(left);
        if (size == 0) return true;
    }
    if (deadline_) {
        // Past its deadline the app's output goes nowhere (the client got a
        // 504 or an aborted stream): it stops as for a client gone.
        if (deadline_->expired()) return false;
        deadline_->produced(!headers_sent_);
    }
    if (!headers_sent_) {
        headers_sent_ = true;
        port_->post_fn([link = stream_, status = head_.status, headers = std::move(head_.headers),
                        length = head_.content_length, deadline = deadline_]() mutable {
            if (deadline && deadline->answered_for_app()) return;
            link->ex->begin(status, std::move(headers), length);
        });
    }
    sent_ += size;
    {
        std::lock_guard lock(stream_->mutex);
        stream_->unwritten += size;
    }
    port_->post_fn([guard = room_guard(stream_), chunk = std::string(data, size), deadline = deadline_]() mutable {
        guard.ran = true;
        std::size_t n = chunk.size();
        if (!(deadline && deadline->answered_for_app())) guard.link->ex->write(std::move(chunk));
        guard.link->on_written(n);
    });
    return true;
}

void wsgi_call::close_iterable(PyObject* result) {
    if (PyList_CheckExact(result) || PyTuple_CheckExact(result)) return;
    py_ref close(PyObject_GetAttrString(result, "close"));
    if (!close) {
        PyErr_Clear();
        return;
    }
    py_ref r(PyObject_CallNoArgs(close.get()));
    if (!r) python::log_exception(describe() + ": the iterable's close() raised");
}

PyObject* wsgi_call::start_response(PyObject* status, PyObject* headers, PyObject* exc_info) {
    if (exc_info != Py_None) {
        if (headers_sent_) {
            // PEP 3333: too late to change the response; re-raise the error.
            if (!PyTuple_Check(exc_info) || PyTuple_GET_SIZE(exc_info) != 3) {
                PyErr_SetString(PyExc_TypeError, "exc_info must be a (type, value, traceback) tuple");
                return nullptr;
            }
            PyObject* t = PyTuple_GET_ITEM(exc_info, 0);
            PyObject* v = PyTuple_GET_ITEM(exc_info, 1);
            PyObject* tb = PyTuple_GET_ITEM(exc_info, 2);
            Py_XINCREF(t);
            Py_XINCREF(v);
            if (tb == Py_None) tb = nullptr;
            Py_XINCREF(tb);
            PyErr_Restore(t, v, tb);
            return nullptr;
        }
    } else if (status_set_) {
        PyErr_SetString(PyExc_AssertionError, "start_response() called a second time without exc_info");
        return nullptr;
    }
    if (!status_set_) {
        // The first call: parsed straight into the reused buffers.
        if (head_.headers.empty()) head_.headers.swap(buffers_.spare_headers);
        if (!parse_status(status, head_.status, app_.checked.get()) ||
            !parse_headers(headers, head_, app_.checked.get())) {
            // Nothing of a refused list is kept: a hold sends head_.headers
            // even without a status.
            head_.headers.clear();
            head_.content_length.reset();
            return nullptr;
        }
    } else {
        // A replacement (exc_info): the first head stays if this one fails.
        response_head head;
        if (!parse_status(status, head.status, app_.checked.get()) || !parse_headers(headers, head, app_.checked.get()))
            return nullptr;
        head_ = std::move(head);
    }
    status_set_ = true;
    return Py_NewRef(writer_);
}

PyObject* wsgi_call::write(PyObject* data) {
    if (!status_set_) {
        PyErr_SetString(PyExc_AssertionError, "write() called before start_response()");
        return nullptr;
    }
    if (!PyBytes_Check(data)) {
        PyErr_Format(PyExc_TypeError, "write() argument must be bytes, not %.100s", Py_TYPE(data)->tp_name);
        return nullptr;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(data);
    if (size && !send_chunk(PyBytes_AS_STRING(data), static_cast<std::size_t>(size))) {
        PyErr_SetString(PyExc_ConnectionResetError, "the client disconnected");
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject* wsgi_call::hold(realtime::hold_options options, PyObject* on_message) {
    if (hold_) {
        PyErr_SetString(PyExc_RuntimeError, "m0.hold(): this request is already held");
        return nullptr;
    }
    if (headers_sent_) {
        PyErr_SetString(PyExc_RuntimeError, "m0.hold(): the response has already begun");
        return nullptr;
    }
    if (options.mode == realtime::hold_mode::ws) {
        // The view may answer 400 itself; the request is read-only while
        // its job runs, so checking it here is safe.
        if (auto why = app_.hub->check_websocket(*req_)) {
            PyErr_Format(PyExc_ValueError, "m0.hold(): not a WebSocket handshake: %s", why->c_str());
            return nullptr;
        }
        if (on_message) options.inbound = std::make_shared<ws_dispatcher>(lane_, on_message, describe(), deadlines_);
    }
    // Without the GIL: with a Redis bus, subscribing waits for the server to
    // confirm the channels, and other Python threads need not wait with it.
    Py_BEGIN_ALLOW_THREADS
    hold_ = app_.hub->subscribe(*reactor_io_, std::move(options));
    Py_END_ALLOW_THREADS
    if (!hold_) {
        PyErr_SetString(PyExc_RuntimeError, "m0.hold(): the server is stopping");
        return nullptr;
    }
    Py_RETURN_NONE;
}

void wsgi_call::complete(bool cancelled) noexcept {
    // Past the deadline the core answered for the app (504 or an aborted
    // stream): what the app produced late is dropped with the call.
    const bool late = !cancelled && deadline_ && deadline_->answered_for_app();
    if (hold_ && (late || cancelled || outcome_ != outcome::hold)) {
        app_.hub->cancel(std::move(hold_));
        hold_.reset();
    }
    if (late) return;
    if (cancelled) {
        ex_->respond(503, {{"Content-Type", "text/plain; charset=utf-8"}}, "Service Unavailable\n");
        return;
    }
    switch (outcome_) {
    case outcome::respond:
        if (buffers_.body.empty() && head_.content_length && req_->method == "HEAD") {
            // A HEAD answer announces the length a GET would have (Werkzeug
            // sends none of the body); no body follows either way.
            ex_->begin(head_.status, std::move(head_.headers), head_.content_length);
            ex_->end();
        } else if (buffers_.body.size() <= response_buffers::lent_body_max) {
            // Lent: the engine copies a body this small anyway, and the
            // buffers go back to the cache for the next request.
            ex_->respond_borrowed(head_.status, head_.headers, buffers_.body);
        } else {
            ex_->respond(head_.status, std::move(head_.headers), std::move(buffers_.body));
        }
        break;
    case outcome::streamed:
        if (ex_->client_gone() || (head_.content_length && sent_ != *head_.content_length))
            ex_->abort();
        else
            ex_->end();
        break;
    case outcome::file:
        ex_->begin(head_.status, std::move(head_.headers), file_length_);
        if (file_length_ > 0) {
            ex_->write_file(file_fd_, file_offset_, file_length_);
        } else {
            ::close(file_fd_);
        }
        file_fd_ = -1;
        ex_->end();
        break;
    case outcome::error:
        ex_->respond(500, {{"Content-Type", "text/plain; charset=utf-8"}}, "Internal Server Error\n");
        break;
    case outcome::abort:
        ex_->abort();
        break;
    case outcome::hold:
        app_.hub->attach(std::move(hold_), ex_, std::move(head_.headers));
        break;
    }
}

}  // namespace m0::wsgi
