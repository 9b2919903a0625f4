#pragma once
// A WebSocket hold's inbound messages, run on the executor: each calls the
// view's on_message(conn, message), one job at a time per connection so
// that messages arrive in order however many threads the pool has.
#include <Python.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>

#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/realtime.hpp>

namespace m0::wsgi {

class ws_dispatcher final : public realtime::inbound_handler, public std::enable_shared_from_this<ws_dispatcher> {
public:
    // GIL held: takes a new reference to `on_message`. `where` names the
    // view in log lines.
    // `deadlines`: each message's call to on_message gets the request
    // deadline (null: none); past it the connection closes with 1011.
    ws_dispatcher(executor_lane& lane, PyObject* on_message, std::string where, deadline_watch* deadlines = nullptr);
    ~ws_dispatcher() override;

    // Reactor thread of the hold.
    // False while more than max_backlog bytes wait for the application.
    bool on_message(const std::shared_ptr<realtime::connection>& conn, realtime::payload_kind kind,
                    std::string data) override;
    void on_close(std::uint16_t code) override;

private:
    struct inbound {
        realtime::payload_kind kind;
        std::string data;
        std::shared_ptr<request_deadline> deadline;  // made on the reactor when it is dispatched
    };
    class batch_job;

    // Reactor: submits the queued messages as one job unless one is running.
    void dispatch();
    // Executor, GIL held: one message to the application; false once it raised.
    bool call(const inbound& m);
    void release_python() noexcept;

    // What may wait for on_message before the peer is no longer read: a
    // flood of messages meets TCP back-pressure, not a growing queue.
    static constexpr std::size_t max_backlog = 1024 * 1024;

    executor_lane& lane_;
    const std::string where_;
    deadline_watch* const deadlines_;
    // Reactor side.
    std::deque<inbound> queue_;
    std::size_t backlog_ = 0;  // bytes queued or in the running job
    bool reading_paused_ = false;
    std::shared_ptr<realtime::connection> conn_;
    bool busy_ = false;      // a job is submitted and not completed
    bool closed_ = false;    // no message follows
    bool released_ = false;  // the job that lets go of the Python objects was submitted
    bool stopped_ = false;   // the lane cancelled a job: the executor is stopping
    // Executor side (one job at a time, so never concurrently).
    PyObject* on_message_;
    PyObject* conn_object_ = nullptr;
    std::atomic<bool> failed_{false};  // on_message raised: the rest is dropped
};

}  // namespace m0::wsgi
