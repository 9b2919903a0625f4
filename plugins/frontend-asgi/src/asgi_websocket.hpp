#pragma once
// One connection of the websocket scope as an executor job that finishes
// later. run() (loop thread, GIL held) builds the scope and starts the app
// as a Task; websocket.accept posts the upgrade to the reactor, which runs
// a libs/websocket session on the connection. Inbound messages travel to
// the loop through post_to_job into a bounded queue the app drains with
// receive(): while it is full the session stops reading the socket. The
// job finishes when the app's coroutine ends.
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/websocket/handshake.hpp>
#include <m0/websocket/session.hpp>

#include "asgi_call.hpp"

namespace m0::asgi {

// What a call, its session's callbacks on the reactor, and the job tasks
// they post share (the last two may outlive the call). Python references
// are dropped by release() when the call ends, never in the destructor.
struct ws_link : std::enable_shared_from_this<ws_link> {
    ws_link(executor_lane& lane, std::size_t max_messages, std::size_t max_bytes)
        : lane(lane), max_messages(max_messages), max_bytes(max_bytes) {}

    executor_lane& lane;
    // Backpressure of websocket.send (the room send() awaits), shared with
    // the reactor's drain reports; gone once the connection ended.
    const std::shared_ptr<flow> out = std::make_shared<flow>();
    // The inbound queue's bound: messages handed to the loop and not yet
    // taken by receive().
    const std::size_t max_messages;
    const std::size_t max_bytes;

    // Reactor thread.
    std::shared_ptr<http::byte_stream> stream;
    std::shared_ptr<websocket::session> session;
    std::uint64_t posted_messages = 0, posted_bytes = 0;  // handed to the loop
    std::uint64_t acked_messages = 0, acked_bytes = 0;    // taken by the app, as last reported
    bool paused = false;                                  // the session stopped reading for us
    bool queue_full() const {
        return posted_messages - acked_messages >= max_messages || posted_bytes - acked_bytes >= max_bytes;
    }
    // An inbound message from the session: to the loop, pausing the
    // session when the queue is full.
    void post(websocket::session& s, websocket::message m);
    // The app took messages up to these counts: resume reading, or ask
    // again if what arrived since still fills the queue.
    void on_ack(std::uint64_t messages, std::uint64_t bytes);

    // Loop thread, GIL held.
    PyObject* conn = nullptr;           // the glue's _WebSocket (strong ref) while the call lives
    completion_port* port = nullptr;    // while the call lives
    std::uint64_t consumed_messages = 0, consumed_bytes = 0;
    std::uint64_t arrived_messages = 0, arrived_bytes = 0;
    bool ack_wanted = false;  // the reactor paused and waits to hear that the queue emptied
    bool closed = false;      // websocket.disconnect is due

    // An inbound message, in arrival order.
    void deliver(websocket::message m);
    // The connection ended (the peer's close code, or 1006).
    void on_closed(std::uint16_t code, const std::string& reason);
    // receive() took a message of `bytes`.
    void consumed(std::size_t bytes);
    // The reactor paused reading: tell it once the queue is half empty.
    void on_paused();
    void release();

private:
    void maybe_ack();
};

class websocket_call final : public job {
public:
    websocket_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
                   websocket::handshake_result handshake);
    ~websocket_call() override;
    bool finishes_later() const noexcept override { return true; }
    void run(completion_port& port) noexcept override;
    void complete(bool cancelled) noexcept override;

    // The channel's methods (asgi_ws_channel.cpp), loop thread, GIL held.
    // False with a Python exception set on a bad argument.
    void attach(PyObject* conn);
    bool accept(PyObject* subprotocol, PyObject* headers);
    void deny();  // websocket.close before accept: 403
    bool respond_start(PyObject* status, PyObject* headers);
    bool respond_body(PyObject* body, bool more);
    // websocket.send: 1 when the app should wait for room, -1 on an error.
    int send(PyObject* data);
    void wait_room(PyObject* future);
    bool close(PyObject* code, PyObject* reason);
    void consumed(std::size_t bytes) { link_->consumed(bytes); }
    void fail(PyObject* message);
    // The app's coroutine ended, or its Task is done (a Task cancelled
    // before it ran): finish the job. `this` may be gone afterwards.
    void finish() noexcept;

private:
    void post_close(std::uint16_t code, std::string reason);
    void post_response(unsigned status, std::vector<http::response_header> headers, std::string body);

    application& app_;
    executor_lane& lane_;
    http::exchange_ptr ex_;
    const http::request* req_;
    request_facts facts_;
    websocket::handshake_result handshake_;
    completion_port* port_ = nullptr;
    PyObject* channel_ = nullptr;  // strong ref until the job finishes
    PyObject* task_ = nullptr;     // strong ref until the job finishes
    std::shared_ptr<ws_link> link_;

    bool accepted_ = false;   // websocket.accept posted
    bool answered_ = false;   // an HTTP answer (403, denial, 500) posted
    bool response_started_ = false;
    unsigned status_ = 0;
    std::vector<http::response_header> headers_;
    std::string body_;  // the denial response's body, sent whole at its end
};

}  // namespace m0::asgi
