#pragma once
// Request deadlines (server.request_timeout, a mount's request_timeout): the
// longest an application may go without producing. A frontend asks its
// reactor's deadline_watch for a request_deadline when it hands a request to
// its application, and tells it what the application does; the core's
// watchdog thread does the rest (docs/architecture.md, "Request deadlines"):
// at the deadline it answers 504 (or aborts a begun response), logs where the
// application was stuck, writes the executor thread off (executor::write_off)
// and, when the process can no longer serve (too many threads written off,
// the interpreter wedged, a reactor blocked), has it replaced.
//
// The clock starts when the application is called (started()), restarts each
// time it produces (the response head, a piece of a streamed body) and stops
// when it has finished. Time it spends waiting on the server (for the
// client's request body, for room in the output buffer) does not count: the
// frontend says so with waiting_on_server(). Holds and upgraded connections
// run no application code and are not timed.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <m0/api.hpp>
#include <m0/http.hpp>

namespace m0 {

// Where an application call is stuck, as its frontend can tell from the
// watchdog thread: a Python stack, an await chain. `interpreter_wedged`: no
// code of that interpreter can run (its lock is held past the deadline), so
// nothing but a new process serves again.
struct stuck_report {
    std::string where;
    bool interpreter_wedged = false;
};

class request_deadline {
public:
    virtual ~request_deadline() = default;

    // The executor thread that runs the application, right before calling
    // it: the clock starts. `where` runs on the watchdog thread at the
    // deadline, while this thread may still be stuck: it must not wait for
    // anything this thread holds (take no GIL unconditionally). Null: the
    // log says only that the application did not produce.
    // `stop`: for an application the executor cannot write off (a coroutine
    // on an event loop), run on the reactor thread once the core answered
    // for it: ask it to stop (cancel its task). If it has not finished
    // within a grace period after that, the process is given up.
    virtual void started(std::function<stuck_report()> where, std::function<void()> stop = nullptr) = 0;
    // Any thread: the application produced (`head`: the response head, which
    // it can send once). The clock starts again.
    virtual void produced(bool head) noexcept = 0;
    // Any thread: the application waits on the server (a body piece, room to
    // write) while `waiting`; the clock is paused meanwhile.
    virtual void waiting_on_server(bool waiting) noexcept = 0;
    // Any thread, from the application itself: this request's allowance,
    // from now and from each later production (nullopt or zero: no deadline).
    virtual void set_timeout(std::optional<std::chrono::nanoseconds> timeout) noexcept = 0;
    // The executor thread: the application returned (its response is
    // produced). Must be called before the thread can take another job.
    virtual void finished() noexcept = 0;

    // Any thread: the deadline passed. From then on what the application
    // produces reaches no client.
    virtual bool expired() const noexcept = 0;
    // Reactor thread: the core has answered for the application (504, or an
    // aborted stream) or does it now, if the deadline passed. True: the
    // frontend sends nothing more for this request and only releases what
    // the call holds. Call it first in a job's complete().
    virtual bool answered_for_app() = 0;
};

// One per reactor and mount (reactor_context::deadlines), made by the core.
class deadline_watch {
public:
    virtual ~deadline_watch() = default;
    // This mount's request_timeout; zero when deadlines are off.
    virtual std::chrono::nanoseconds timeout() const noexcept = 0;
    // Reactor thread: the deadline of one application call answering `ex`.
    // Null when deadlines are off.
    virtual std::shared_ptr<request_deadline> watch(http::exchange_ptr ex) = 0;
    // Reactor thread: the deadline of one application call with no exchange
    // to answer (a WebSocket message handed to a view): at the deadline
    // `answer` runs on the reactor instead of a 504 (close the connection
    // with 1011, say); `what` names the call in the log line.
    virtual std::shared_ptr<request_deadline> watch_call(std::string what, std::function<void()> answer) = 0;
};

}  // namespace m0
