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
#include <utility>
#include <vector>

#include <boost/system/error_code.hpp>

#include <m0/deadline.hpp>
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
    // Its lifespan state per loop (a dict: loop -> state), filled by each
    // loop's lifespan startup; the frontend's own, as several ASGI mounts
    // may share a loop.
    python::py_ref states;
    scope_builder scope;
};

// Loop thread, GIL held. The running loop (borrowed; looked up once per
// thread), and the lifespan state of `app` on it (borrowed, or null, with
// an exception set on an error).
PyObject* running_loop();
PyObject* lifespan_state(const application& app);

// Computed on the reactor, so the loop thread parses nothing.
struct request_facts {
    std::string path;      // percent-decoded, when it differs from the raw path
    bool decoded = false;  // path holds it (else the raw path is the decoded one)
    bool body_streamed = false;  // receive() pulls the body from the engine
};

// Flow control, body pulls and disconnect state shared by a call and the
// reactor callbacks that outlive it (a drain waiter, a pull or a job task on
// its way). Python references are dropped by release_all() when the call
// ends, never in the destructor (which may run without the GIL).
struct flow {
    // Reactor thread only.
    std::size_t credit = 0;  // bytes written since the last report
    bool armed = false;      // a when_drained waiter is set
    // Loop thread only (GIL held).
    std::size_t owed = 0;  // bytes posted and not yet reported drained
    bool gone = false;     // the client went away
    bool peer_eof = false; // the client shut down its sending side after its body (FIN)
    bool alive = true;     // the call has not finished
    bool pulling = false;  // a read_body is on its way
    bool watching = false; // an on_client_gone callback is registered
    bool watching_eof = false;  // an on_peer_eof callback is registered
    PyObject* room = nullptr;        // future send() awaits (strong ref)
    PyObject* disconnect = nullptr;  // future receive() awaits after the body (strong ref)
    PyObject* piece = nullptr;       // future receive() awaits for a body piece (strong ref)
    // A body piece that arrived while no receive() awaited it (the one
    // that asked was cancelled): the next receive() gets it, so no byte is
    // lost. (bytes, last) or None for "the body cannot be read on".
    PyObject* stash = nullptr;
    // The app's Task while the call lives (borrowed: the call holds it),
    // for the deadline's await chain and cancellation.
    PyObject* task = nullptr;
    // The request deadline (null: none): paused while send() waits for room
    // and while receive() waits for a body piece.
    std::shared_ptr<request_deadline> deadline;

    // Loop thread: a report from the reactor.
    void on_report(std::size_t drained, bool client_gone, std::size_t bound);
    // Loop thread: a body piece (or the error that ended the body).
    void on_piece(boost::system::error_code ec, std::string chunk, bool last);
    // Loop thread: the engine says the client is gone.
    void on_gone();
    // Loop thread: the engine saw the client's FIN after the body. Not
    // gone (the response is still written), but receive() says
    // http.disconnect from now on.
    void on_peer_eof();
    // Loop thread: hand `result` (a new reference) to the receive() awaiting
    // a piece, or keep it for the next one.
    void deliver_piece(PyObject* result);
    // Loop thread: resolve and drop the futures.
    void release_room();
    void release_disconnect();
    void release_all();
};

// Reactor thread, after `n` bytes were queued on `target` (an exchange or
// a byte stream): once its queue drops to `bound` bytes, or the peer is
// gone (`gone(target)`), the bytes drained are reported to the loop, where
// send() awaits room. One waiter per flow at a time.
template <class Target, class Gone>
void report_room(const std::shared_ptr<Target>& target, const std::shared_ptr<flow>& f, executor_lane* lane,
                 std::size_t bound, std::size_t n, Gone gone) {
    f->credit += n;
    if (f->armed) return;
    f->armed = true;
    std::weak_ptr<Target> weak = target;
    target->when_drained(bound, [f, weak, lane, bound, gone] {
        f->armed = false;
        const std::size_t drained = std::exchange(f->credit, 0);
        auto t = weak.lock();
        const bool is_gone = !t || gone(*t);
        lane->post_fn_to_job([f, drained, is_gone, bound] { f->on_report(drained, is_gone, bound); });
    });
}

class asgi_call final : public job {
public:
    asgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
              std::shared_ptr<request_deadline> deadline = nullptr);
    ~asgi_call() override;
    bool finishes_later() const noexcept override { return true; }
    void run(completion_port& port) noexcept override;
    void complete(bool cancelled) noexcept override;

    // The channel's methods (asgi_channel.cpp), loop thread, GIL held. On a
    // Python error they return null / -1 with the exception set.
    // send(message): a new reference to what the app awaits.
    PyObject* send_message(PyObject* channel, PyObject* message);
    PyObject* body() const;
    bool streamed() const noexcept { return facts_.body_streamed; }
    // Resolves `future` with the next body piece, (bytes, last), or None
    // once the body cannot be read on (the client left, the response is
    // complete); pulls from the engine only now.
    void pull(PyObject* future);
    bool start(PyObject* status, PyObject* headers, bool trailers);
    int send(PyObject* data, bool more);  // 1: wait for room
    bool pathsend(PyObject* path);
    // http.response.trailers; the last one (more false) ends the response.
    bool trailers(PyObject* headers, bool more);
    void wait_room(PyObject* future);
    bool wait_disconnect(PyObject* future);
    bool gone() const noexcept { return flow_->gone; }
    // receive() says http.disconnect because of the client: it is gone, or
    // it shut down its sending side.
    bool disconnected() const noexcept { return flow_->gone || flow_->peer_eof; }
    bool started() const noexcept { return start_seen_; }
    bool ended() const noexcept { return ended_; }
    void fail(PyObject* message);
    // The Task is done: finish the job. `this` may be gone afterwards.
    void on_task_done(PyObject* task) noexcept;
    // The app's coroutine ends (its Task is done once it returns): the
    // same, without waiting for the done callback.
    void on_serve_end() noexcept;

private:
    // send() of http.response.body / http.response.trailers.
    PyObject* send_body(PyObject* message);
    PyObject* send_trailers(PyObject* message);
    void post_error_response();
    void post_abort();
    void post_write(std::string data);
    void post_end();
    // The response is complete, failed or aborted: what runs after it (an
    // ASGI background task) is not timed.
    void end_response();
    // The deadline's clock starts; at the deadline it cancels the Task.
    void start_deadline(PyObject* loop_thread_state);
    // send({"type": "m0.request_timeout", "seconds": s}).
    PyObject* send_request_timeout(PyObject* message);
    // Registers (once each) the reactor callbacks that tell the loop of a
    // client gone (on_client_gone) and, with `fin`, of its FIN (on_peer_eof).
    void watch_client(bool fin = false);

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
    bool body_complete_ = false;  // the last http.response.body (or pathsend) arrived
    // http.response.trailers extension: trailers=True in the start, and
    // the fields collected so far (sent only to a client that asked, TE).
    bool expect_trailers_ = false;
    bool send_trailers_ = false;
    std::vector<http::response_header> trailers_;
};

}  // namespace m0::asgi
