#pragma once
// One WSGI request as an executor job: run() calls the application on an
// executor thread (GIL held there only), complete() answers on the reactor.
#include <Python.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/python/ref.hpp>
#include <m0/recycling_allocator.hpp>
#include <m0/realtime.hpp>

#include "body_reader.hpp"
#include "response_buffers.hpp"
#include "response_head.hpp"
#include "wsgi_environ.hpp"
#include "wsgi_settings.hpp"

namespace m0::wsgi {

struct stream_link;

// environ["m0.request_timeout"], in every environ (the template's): one
// function for every request, acting on the request its thread runs (a
// request without a deadline ignores it). GIL held; kept for the process.
PyObject* request_timeout_callable();

// At a request deadline, from the watchdog thread: where the executor thread
// whose state is `tstate` is stuck (its Python stack, read without the GIL),
// and whether the GIL can be had at all.
stuck_report where_stuck(PyThreadState* tstate);

// The streamed responses still producing. When the process stops serving,
// no reactor is left to make room or to report a client gone, so each
// producer is released here instead (it stops at its next chunk).
class stream_registry {
public:
    // False once release_all() ran: the new stream starts released.
    bool add(stream_link* link);
    void remove(stream_link* link) noexcept;
    void release_all();

private:
    std::mutex mutex_;
    std::unordered_set<stream_link*> links_;
    bool released_ = false;
};

// What every request of a frontend shares. The Python parts are touched with
// the GIL held only.
struct application {
    settings config;
    // wsgi.input may stream: the executor runs jobs off the reactor, so a
    // job can wait for the reactor to pull the body (not with `inline`).
    bool input_streams = false;
    python::py_ref callable;
    std::unique_ptr<environ_builder> environ;
    std::unique_ptr<checked_strings> checked;  // start_response's statuses and header names
    stream_registry streams;
    // The realtime service; null without a `realtime:` section (then the
    // environ has no m0.hold).
    realtime::hub* hub = nullptr;
};

// A streamed response's link between the executor thread producing chunks
// and the reactor writing them: bounds what is queued (flow control) and
// tells the producer when the client went away.
struct stream_link : std::enable_shared_from_this<stream_link> {
    stream_link(stream_registry& r, http::exchange_ptr e, std::size_t high)
        : registry(r), ex(std::move(e)), high_water(high) {
        if (!registry.add(this)) gone = true;
    }
    ~stream_link() { registry.remove(this); }
    // Reactor: after handing `n` bytes to the exchange.
    void on_written(std::size_t n);
    // A reactor task or drain callback meant to make room was destroyed
    // without running (the reactor was torn down at a hard stop): release the
    // producer as if the client had gone, so it cannot wait forever.
    void abandon();

    stream_registry& registry;
    http::exchange_ptr ex;
    const std::size_t high_water;
    std::mutex mutex;
    std::condition_variable room;
    std::size_t unwritten = 0;    // posted, not yet given to the exchange
    bool waiting_drain = false;   // the exchange holds more than high_water
    bool gone = false;            // the client disconnected
};

// Held by each reactor-side callback that a waiting producer depends on:
// calls stream_link::abandon() if the callback is destroyed without running.
struct room_guard {
    explicit room_guard(std::shared_ptr<stream_link> l) : link(std::move(l)) {}
    room_guard(room_guard&& other) noexcept : link(std::move(other.link)), ran(other.ran) {}
    room_guard(const room_guard&) = delete;
    room_guard& operator=(const room_guard&) = delete;
    ~room_guard() {
        if (link && !ran) link->abandon();
    }
    std::shared_ptr<stream_link> link;
    bool ran = false;
};

// Made per request on the reactor and deleted there after its completion:
// from the reactor's free list instead of malloc (recycled).
class wsgi_call final : public job, public recycled<wsgi_call> {
public:
    // `lane` is the one the call runs on: a WebSocket hold's messages follow it.
    // `deadline`: this call's request deadline (null: none); `deadlines`:
    // the reactor's, for a WebSocket hold's messages.
    wsgi_call(application& app, executor_lane& lane, http::exchange_ptr ex, request_facts facts,
              std::shared_ptr<request_deadline> deadline = nullptr, deadline_watch* deadlines = nullptr);
    ~wsgi_call() override;
    void run(completion_port& port) noexcept override;
    void complete(bool cancelled) noexcept override;

    // Called by the start_response / write() objects, GIL held. Return a new
    // reference, or null with a Python exception set.
    PyObject* start_response(PyObject* status, PyObject* headers, PyObject* exc_info);
    PyObject* write(PyObject* data);
    // environ["m0.request_timeout"](seconds): this request's deadline from
    // now (None or 0: none). False with a Python exception set on a bad value.
    bool set_request_timeout(PyObject* seconds);
    // The call the calling executor thread runs now (null outside run()).
    static wsgi_call* current() noexcept;

    // environ["m0.hold"]: subscribes now, on this executor thread, so that
    // nothing published after the view returns is missed. `on_message`
    // (borrowed; ws only, may be null) receives the WebSocket's messages.
    PyObject* hold(realtime::hold_options options, PyObject* on_message);

private:
    enum class outcome { respond, streamed, file, error, abort, hold };

    void consume(PyObject* result);
    bool consume_sequence(PyObject* seq);
    void consume_iterator(PyObject* result);
    bool try_sendfile(PyObject* wrapper);
    // Sends one non-empty chunk on the streamed path; false (exception set)
    // if the client is gone.
    bool send_chunk(const char* data, std::size_t size);
    bool wait_for_room();
    // Logs the pending exception with its traceback as the app's error,
    // unless body_failure_escaped().
    void fail(const char* what);
    // The pending exception is the one wsgi.input raised because the client
    // ended the body early (or one raised from it): a client gone is no
    // app error, so it is cleared and one line logged instead.
    bool body_failure_escaped();
    void close_iterable(PyObject* result);
    std::string describe() const;

    application& app_;
    executor_lane& lane_;
    http::exchange_ptr ex_;
    const http::request* req_;
    request_facts facts_;
    std::thread::id reactor_thread_;
    boost::asio::io_context* reactor_io_;
    std::shared_ptr<realtime::pending_hold> hold_;
    completion_port* port_ = nullptr;
    PyObject* writer_ = nullptr;  // the write() callable start_response returns
    bool on_reactor_ = false;  // the inline executor: no reactor loop runs while the app does
    // The request deadline: started when the app is called, told of each
    // piece it produces and of each wait on the reactor, finished when run()
    // ends. Once it passed, nothing this call produces reaches the client.
    std::shared_ptr<request_deadline> deadline_;
    deadline_watch* deadlines_;

    // Taken from the reactor thread's cache when the job is made, given
    // back when it is destroyed (both on the reactor): head_.headers and the
    // body are filled in buffers that already have room.
    response_buffers buffers_;
    response_head head_;
    bool status_set_ = false;
    bool headers_sent_ = false;  // begin() was posted
    std::uint64_t sent_ = 0;     // body bytes posted on the streamed path
    outcome outcome_ = outcome::error;
    int file_fd_ = -1;
    std::uint64_t file_offset_ = 0, file_length_ = 0;
    std::shared_ptr<stream_link> stream_;
    std::unique_ptr<body_reader> reader_;  // wsgi.input of a streamed body
};

}  // namespace m0::wsgi
