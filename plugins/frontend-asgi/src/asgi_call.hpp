#pragma once
// One ASGI request as an executor job that finishes later: run() (on the
// loop thread, GIL held) builds the scope and starts the app as a Task; the
// coroutine's last step finishes the job (the Task's done callback does, for
// a Task cancelled before it ran). Everything the reactor must do
// (begin, write, end, abort) is posted to it.
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/python/ref.hpp>

#include "asgi_scope.hpp"
#include "asgi_settings.hpp"

namespace m0::asgi {

// What every request of a frontend shares. Python parts: GIL held only.
struct application {
    settings config;
    python::py_ref callable;
    python::py_ref id;  // id(callable): with the loop, the key of its lifespan state
    scope_builder scope;
};

// Computed on the reactor, so the loop thread parses nothing.
struct request_facts {
    std::string path;      // percent-decoded, when it differs from the raw path
    bool decoded = false;  // path holds it (else the raw path is the decoded one)
};

// Flow control and disconnect state shared by a call and the reactor
// callbacks that outlive it (a drain waiter, a job task on its way).
struct flow {
    // Reactor thread only.
    std::size_t credit = 0;  // bytes written since the last report
    bool armed = false;      // a when_drained waiter is set
    // Loop thread only (GIL held).
    std::size_t owed = 0;  // bytes posted and not yet reported drained
    bool gone = false;     // the client went away
    bool alive = true;     // the call has not finished
    PyObject* room = nullptr;        // future send() awaits (strong ref)
    PyObject* disconnect = nullptr;  // future receive() awaits (strong ref)

    // Loop thread: a report from the reactor.
    void on_report(std::size_t drained, bool client_gone, std::size_t bound);
    // Loop thread: resolve and drop the futures.
    void release_room();
    void release_disconnect();
};

class asgi_call final : public job {
public:
    asgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts);
    ~asgi_call() override;
    bool finishes_later() const noexcept override { return true; }
    void run(completion_port& port) noexcept override;
    void complete(bool cancelled) noexcept override;

    // The channel's methods (asgi_channel.cpp), loop thread, GIL held. On a
    // Python error they return null / -1 with the exception set.
    // send(message): a new reference to what the app awaits.
    PyObject* send_message(PyObject* channel, PyObject* message);
    PyObject* body() const;
    bool start(PyObject* status, PyObject* headers);
    int send(PyObject* data, bool more);  // 1: wait for room
    bool pathsend(PyObject* path);
    void wait_room(PyObject* future);
    bool wait_disconnect(PyObject* future);
    bool gone() const noexcept { return flow_->gone; }
    bool started() const noexcept { return start_seen_; }
    bool ended() const noexcept { return ended_; }
    void fail(PyObject* message);
    // The Task is done: finish the job. `this` may be gone afterwards.
    void on_task_done(PyObject* task) noexcept;
    // The app's coroutine ends (its Task is done once it returns): the
    // same, without waiting for the done callback.
    void on_serve_end() noexcept;

private:
    PyObject* state() const;
    void post_error_response();
    void post_abort();
    void post_write(std::string data);

    application& app_;
    executor_lane& lane_;
    http::exchange_ptr ex_;
    const http::request* req_;
    request_facts facts_;
    completion_port* port_ = nullptr;
    PyObject* channel_ = nullptr;  // strong ref until the Task is done
    PyObject* task_ = nullptr;     // strong ref until it is done (the loop keeps only weak ones)
    PyObject* on_done_ = nullptr;  // its done callback (strong ref)
    std::shared_ptr<flow> flow_ = std::make_shared<flow>();

    unsigned status_ = 0;
    std::vector<http::response_header> headers_;
    std::optional<std::uint64_t> content_length_;
    bool start_seen_ = false;  // http.response.start arrived
    bool begun_ = false;       // begin() was posted (streamed path)
    bool ended_ = false;       // the response is complete, failed or aborted
};

}  // namespace m0::asgi
