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
#include <string>

#include <boost/system/error_code.hpp>

#include <m0/executor.hpp>
#include <m0/http.hpp>

namespace m0::wsgi {

class body_reader {
public:
    // `piece`: bytes asked of the reactor per pull (input_buffer);
    // `pulled`: the body's first bytes, already pulled.
    body_reader(http::exchange_ptr ex, completion_port& port, std::size_t piece, std::string pulled);

    // GIL held (released while waiting). New bytes objects, or null with a
    // Python exception set (OSError when the body cannot be read to its end).
    // A negative size means "no limit".
    PyObject* read(Py_ssize_t size);
    PyObject* readline(Py_ssize_t limit);
    bool at_end() const noexcept { return end_ && pos_ == buf_.size(); }

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
    PyObject* take(std::size_t n);

    http::exchange_ptr ex_;
    completion_port& port_;
    const std::size_t piece_;
    std::string buf_;      // pulled, [pos_, size) not read by the app yet
    std::size_t pos_ = 0;
    bool end_ = false;     // the last piece arrived
    bool failed_ = false;  // a pull failed: every later read fails too
    std::string failure_;
};

}  // namespace m0::wsgi
