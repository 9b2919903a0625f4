#pragma once
// wsgi.input over a streamed request body: the executor thread reading it
// blocks (GIL released) while the reactor pulls the next piece from the
// connection for it, so a large upload never sits whole in memory.
#include <Python.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/system/error_code.hpp>

#include <m0/deadline.hpp>
#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/python/ref.hpp>

namespace m0::wsgi {

class body_reader {
public:
    // `piece`: bytes asked of the reactor per pull (input_buffer);
    // `pulled`: the body's first bytes, already pulled; `promised`: its
    // Content-Length (none when chunked).
    // `deadline`: the request's (null: none), paused while a pull waits.
    body_reader(http::exchange_ptr ex, completion_port& port, std::size_t piece, std::string pulled,
                std::optional<std::uint64_t> promised, request_deadline* deadline = nullptr);

    // GIL held (released while waiting). New bytes objects, or null with a
    // Python exception set (OSError when the body cannot be read to its end).
    // A negative size means "no limit".
    PyObject* read(Py_ssize_t size);
    PyObject* readline(Py_ssize_t limit);
    bool at_end() const noexcept { return end_ && pos_ == buf_.size(); }

    // The client ended the body early (cut it short, reset, went over a
    // limit or its timeout; the engine answered if it still could), and
    // `exc` (GIL held) is the OSError a read raised for that, or was raised
    // from it (`raise X from e`, as Django's UnreadablePostError).
    bool client_failure_raised(PyObject* exc) const;
    // What went wrong, with how many body bytes arrived:
    // "the client shut down its sending side after 3000 of 100000 bytes".
    const std::string& failure() const noexcept { return failure_; }

private:
    // What a pull hands back from the reactor.
    struct pull_result {
        std::mutex mutex;
        std::condition_variable ready_cv;
        bool ready = false;
        bool abandoned = false;  // the reactor task was dropped without running
        boost::system::error_code ec;
        std::string chunk;
        bool last = false;
    };

    // Until `want` bytes are buffered past pos_, or the body ended; false
    // with a Python exception set on error.
    bool fill(std::size_t want);
    // Until a '\n' or `limit` bytes are buffered past pos_, or the body
    // ended.
    bool fill_line(std::size_t limit);
    bool pull_one(std::size_t at_least);
    // Sets failure_exc_ as the pending exception; returns false.
    bool raise_failure() const;
    PyObject* take(std::size_t n);

    http::exchange_ptr ex_;
    completion_port& port_;
    request_deadline* deadline_;
    const std::size_t piece_;
    std::string buf_;      // pulled, [pos_, size) not read by the app yet
    std::size_t pos_ = 0;
    bool end_ = false;     // the last piece arrived
    std::uint64_t received_ = 0;  // body bytes pulled so far
    const std::optional<std::uint64_t> promised_;
    bool failed_ = false;  // a pull failed: every later read raises failure_exc_ again
    bool client_failed_ = false;  // ... because of the client (not a stop)
    std::string failure_;
    python::py_ref failure_exc_;
};

}  // namespace m0::wsgi
