#include "asgi_websocket.hpp"

#include <utility>

#include <boost/asio/post.hpp>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/websocket/frame.hpp>

#include "asgi_fields.hpp"
#include "asgi_glue.hpp"
#include "asgi_ws_channel.hpp"

namespace m0::asgi {

namespace {

const std::vector<http::response_header> text_plain = {{"Content-Type", "text/plain; charset=utf-8"}};

// Names the handshake answers itself; an app's value for them is dropped.
bool handshake_owned(std::string_view name) {
    return http::ascii_iequals(name, "upgrade") || http::ascii_iequals(name, "connection") ||
           http::ascii_iequals(name, "sec-websocket-accept") || http::ascii_iequals(name, "sec-websocket-extensions") ||
           http::ascii_iequals(name, "sec-websocket-protocol") || http::ascii_iequals(name, "sec-websocket-version");
}

// A close code an endpoint may send (RFC 6455 7.4): what m0 accepts from
// a peer, and 1012-1014 (registered since: restart, try again, bad gateway).
bool sendable_close_code(long code) {
    if (code < 0 || code > 0xffff) return false;
    return websocket::is_valid_close_code(static_cast<std::uint16_t>(code)) || (code >= 1012 && code <= 1014);
}

}  // namespace

void ws_link::post(websocket::session& s, websocket::message m) {
    ++posted_messages;
    posted_bytes += m.data.size();
    lane.post_fn_to_job([self = shared_from_this(), m = std::move(m)]() mutable { self->deliver(std::move(m)); });
    if (paused || !queue_full()) return;
    // The app is behind: stop reading until it catches up.
    paused = true;
    s.pause_reading();
    lane.post_fn_to_job([self = shared_from_this()] { self->on_paused(); });
}

void ws_link::on_ack(std::uint64_t messages, std::uint64_t bytes) {
    acked_messages = messages;
    acked_bytes = bytes;
    if (!paused) return;
    // Messages of the read that made it pause arrived after the pause.
    if (queue_full()) {
        lane.post_fn_to_job([self = shared_from_this()] { self->on_paused(); });
        return;
    }
    paused = false;
    if (session) session->resume_reading();
}

void ws_link::deliver(websocket::message m) {
    if (!conn) return;  // the call is over
    ++arrived_messages;
    arrived_bytes += m.data.size();
    const bool text = m.kind == websocket::opcode::text;
    // Text was validated as UTF-8 by the frame parser.
    python::py_ref payload(text ? PyUnicode_DecodeUTF8(m.data.data(), static_cast<Py_ssize_t>(m.data.size()), "strict")
                                : PyBytes_FromStringAndSize(m.data.data(), static_cast<Py_ssize_t>(m.data.size())));
    python::py_ref message(payload ? Py_BuildValue("{s:s,s:O}", "type", "websocket.receive", text ? "text" : "bytes",
                                                   payload.get())
                                   : nullptr);
    python::py_ref size(message ? PyLong_FromSize_t(m.data.size()) : nullptr);
    python::py_ref r(size ? PyObject_CallMethod(conn, "_push", "OO", message.get(), size.get()) : nullptr);
    if (!r) python::log_exception("asgi: cannot hand a WebSocket message to the application");
}

void ws_link::on_closed(std::uint16_t code, const std::string& reason) {
    if (closed) return;
    closed = true;
    out->on_gone();
    if (!conn) return;
    // The frame parser validated the reason as UTF-8.
    python::py_ref text(PyUnicode_DecodeUTF8(reason.data(), static_cast<Py_ssize_t>(reason.size()), "replace"));
    python::py_ref r(text ? PyObject_CallMethod(conn, "_gone", "iO", static_cast<int>(code), text.get()) : nullptr);
    if (!r) python::log_exception("asgi: cannot tell the application its WebSocket closed");
}

void ws_link::consumed(std::size_t bytes) {
    ++consumed_messages;
    consumed_bytes += bytes;
    maybe_ack();
}

void ws_link::on_paused() {
    ack_wanted = true;
    maybe_ack();
}

void ws_link::maybe_ack() {
    if (!ack_wanted || !port) return;
    if (arrived_messages - consumed_messages > max_messages / 2 || arrived_bytes - consumed_bytes > max_bytes / 2)
        return;
    ack_wanted = false;
    // Resumed on the reactor, which re-checks against what it has posted
    // since (the rest of the read that made it pause).
    port->post_fn([self = shared_from_this(), messages = consumed_messages, bytes = consumed_bytes] {
        self->on_ack(messages, bytes);
    });
}

void ws_link::release() {
    port = nullptr;
    Py_CLEAR(conn);
}

websocket_call::websocket_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
                               websocket::handshake_result handshake)
    : app_(app),
      lane_(lane),
      ex_(std::move(ex)),
      req_(&ex_->req()),
      facts_(std::move(facts)),
      handshake_(std::move(handshake)),
      link_(std::make_shared<ws_link>(lane, app.config.websocket_max_queue,
                                      static_cast<std::size_t>(app.config.websocket.session.max_message_size))) {}

websocket_call::~websocket_call() = default;

void websocket_call::run(completion_port& port) noexcept {
    port_ = &port;
    link_->port = &port;
    PyObject* loop = running_loop();
    PyObject* state = loop ? lifespan_state(app_) : nullptr;
    python::py_ref scope, channel, coro, task, on_done, added;
    if (loop && !PyErr_Occurred())
        scope = python::py_ref(
            app_.scope.build_websocket(*req_, facts_.decoded ? std::string_view(facts_.path) : req_->path, state));
    if (scope) channel = python::py_ref(new_ws_channel(this));
    if (channel) {
        PyObject* args[] = {app_.callable.get(), scope.get(), channel.get()};
        coro = python::py_ref(PyObject_Vectorcall(glue(glue_name::serve_ws), args, 3, nullptr));
    }
    if (coro) task = python::py_ref(PyObject_CallMethod(loop, "create_task", "O", coro.get()));
    if (task) on_done = python::py_ref(PyObject_GetAttrString(channel.get(), "done"));
    if (on_done) added = python::py_ref(PyObject_CallMethod(task.get(), "add_done_callback", "O", on_done.get()));
    if (!added) {
        python::log_exception("asgi: " + app_.config.app + ": cannot start the WebSocket");
        if (channel) detach_ws_channel(channel.get());
        if (task) python::py_ref(PyObject_CallMethod(task.get(), "cancel", nullptr));
        PyErr_Clear();
        post_response(500, text_plain, "Internal Server Error\n");
        link_->release();
        port.finish();
        return;
    }
    channel_ = channel.release();
    task_ = task.release();
    // A client that leaves before the app accepts: websocket.disconnect.
    executor_lane* lane = &lane_;
    port.post_fn([ex = ex_, link = link_, lane] {
        ex->on_client_gone([link, lane] { lane->post_fn_to_job([link] { link->on_closed(1006, ""); }); });
    });
}

void websocket_call::complete(bool cancelled) noexcept {
    // Cancelled: the executor stopped before the app saw the handshake.
    if (cancelled) ex_->respond(503, text_plain, "Service Unavailable\n");
}

void websocket_call::attach(PyObject* conn) {
    Py_INCREF(conn);
    Py_XSETREF(link_->conn, conn);
}

bool websocket_call::accept(PyObject* subprotocol, PyObject* headers) {
    std::vector<http::response_header> extra;
    if (!read_fields(headers, extra, nullptr)) return false;
    websocket::handshake_result hs = handshake_;
    if (subprotocol != Py_None) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_Check(subprotocol) ? PyUnicode_AsUTF8AndSize(subprotocol, &n) : nullptr;
        if (!s) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "websocket.accept subprotocol must be a str or None, not %.100s",
                             Py_TYPE(subprotocol)->tp_name);
            return false;
        }
        hs.subprotocol.assign(s, static_cast<std::size_t>(n));
        if (!http::is_token(hs.subprotocol)) {
            PyErr_Format(PyExc_ValueError, "websocket.accept subprotocol %R is not a token", subprotocol);
            return false;
        }
        hs.headers.push_back({"Sec-WebSocket-Protocol", hs.subprotocol});
    }
    for (auto& h : extra)
        if (!handshake_owned(h.name)) hs.headers.push_back(std::move(h));
    accepted_ = true;
    executor_lane* lane = &lane_;
    const websocket::session_options* options = &app_.config.websocket.session;
    port_->post_fn([ex = ex_, link = link_, lane, options, hs = std::move(hs)]() mutable {
        auto stream = ex->upgrade(hs.headers);
        if (!stream) {  // the client left meanwhile
            lane->post_fn_to_job([link] { link->on_closed(1006, ""); });
            return;
        }
        link->stream = stream;
        auto on_message = [link](const std::shared_ptr<websocket::session>& s, websocket::message m) {
            link->post(*s, std::move(m));
        };
        auto on_close = [link, lane](std::uint16_t code, std::string_view reason) {
            lane->post_fn_to_job([link, code, reason = std::string(reason)] { link->on_closed(code, reason); });
            // The session and its stream hold timers and a socket of this
            // reactor: let go of them here, on the reactor, once the
            // session's own call has returned. Otherwise the link's last
            // reference may drop with a job task on the loop thread, even
            // after the reactor's io_context is gone (a stop right after
            // the close).
            boost::asio::post(link->stream->io(), [link] {
                link->session.reset();
                link->stream.reset();
            });
        };
        link->session = websocket::session::start(std::move(stream), *options, hs, std::move(on_message),
                                                  std::move(on_close));
    });
    return true;
}

void websocket_call::deny() { post_response(403, text_plain, "Forbidden\n"); }

bool websocket_call::respond_start(PyObject* status, PyObject* headers) {
    std::vector<http::response_header> fields;
    std::optional<std::uint64_t> length;  // the engine frames the body itself
    if (!read_status(status, status_, "websocket.http.response.start") || !read_fields(headers, fields, &length))
        return false;
    headers_ = std::move(fields);
    response_started_ = true;
    return true;
}

bool websocket_call::respond_body(PyObject* body, bool more) {
    std::string_view data;
    if (!bytes_view(body, data, "websocket.http.response.body body")) return false;
    body_ += data;
    if (!more) post_response(status_, std::move(headers_), std::move(body_));
    return true;
}

int websocket_call::send(PyObject* data) {
    std::string_view payload;
    websocket::opcode kind = websocket::opcode::binary;
    if (PyUnicode_Check(data)) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(data, &n);
        if (!s) return -1;
        payload = {s, static_cast<std::size_t>(n)};
        kind = websocket::opcode::text;
    } else if (!bytes_view(data, payload, "websocket.send bytes")) {
        return -1;
    }
    if (link_->out->gone) return 0;  // the disconnect is on its way to the app
    const std::size_t n = payload.size();
    link_->out->owed += n;
    executor_lane* lane = &lane_;
    const std::size_t bound = app_.config.send_buffer;
    port_->post_fn([link = link_, f = link_->out, lane, bound, n, kind, payload = std::string(payload)] {
        if (!link->session) return;
        link->session->send(kind, payload);
        report_room(link->stream, f, lane, bound, n, [](const http::byte_stream& s) { return s.closed(); });
    });
    return link_->out->owed > bound ? 1 : 0;
}

void websocket_call::wait_room(PyObject* future) {
    Py_INCREF(future);
    Py_XSETREF(link_->out->room, future);
    if (link_->out->owed <= app_.config.send_buffer || link_->out->gone) link_->out->release_room();
}

bool websocket_call::close(PyObject* code, PyObject* reason) {
    const long c = PyLong_Check(code) ? PyLong_AsLong(code) : -1;
    if (!sendable_close_code(c)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "websocket.close code %R is not one an endpoint may send "
                         "(1000-1003, 1007-1014, 3000-4999)", code);
        return false;
    }
    Py_ssize_t n = 0;
    const char* r = PyUnicode_Check(reason) ? PyUnicode_AsUTF8AndSize(reason, &n) : nullptr;
    if (!r) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "websocket.close reason must be a str");
        return false;
    }
    if (n > 123) {  // a control frame's payload is at most 125 bytes
        PyErr_Format(PyExc_ValueError, "websocket.close reason is %zd bytes long; at most 123 fit", n);
        return false;
    }
    post_close(static_cast<std::uint16_t>(c), std::string(r, static_cast<std::size_t>(n)));
    return true;
}

void websocket_call::post_close(std::uint16_t code, std::string reason) {
    port_->post_fn([link = link_, code, reason = std::move(reason)] {
        if (link->session) link->session->close(code, reason);
    });
}

void websocket_call::post_response(unsigned status, std::vector<http::response_header> headers, std::string body) {
    answered_ = true;
    port_->post_fn([ex = ex_, status, headers = std::move(headers), body = std::move(body)]() mutable {
        ex->respond(status, std::move(headers), std::move(body));
    });
}

void websocket_call::fail(PyObject* message) {
    if (message && message != Py_None) {
        const char* text = PyUnicode_Check(message) ? PyUnicode_AsUTF8(message) : nullptr;
        if (!text) PyErr_Clear();
        log::error("asgi: " + app_.config.app + ": " + (text ? text : "error"));
    }
    if (accepted_)
        post_close(websocket::close_code::internal_error, "");
    else if (!answered_)
        post_response(500, text_plain, "Internal Server Error\n");
}

void websocket_call::finish() noexcept {
    if (!port_) return;
    if (!accepted_ && !answered_) {
        // Cancelled at a hard stop, or an exception escaped the glue itself.
        log::warning("asgi: " + app_.config.app + ": WebSocket ended without an answer to its handshake");
        post_response(500, text_plain, "Internal Server Error\n");
    }
    // An app that returns leaves a connection it did not close: 1000. (A
    // session already closing or closed ignores it.)
    if (accepted_) post_close(websocket::close_code::normal, "");
    link_->out->release_all();
    link_->release();
    PyObject* channel = std::exchange(channel_, nullptr);
    if (channel) detach_ws_channel(channel);
    Py_XDECREF(channel);
    Py_CLEAR(task_);
    completion_port* port = std::exchange(port_, nullptr);
    port->finish();  // the reactor may delete this job from now on
}

}  // namespace m0::asgi
