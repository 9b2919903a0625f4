#include "body_reader.hpp"

#include <cstring>
#include <limits>

#include <boost/asio/error.hpp>

#include <m0/python/gil.hpp>

namespace m0::wsgi {

namespace {
// Pulled bytes the app has read are dropped from the front of the buffer
// once they are at least this many (and half of it), not on every read.
constexpr std::size_t compact_above = 64 * 1024;

// Why the body cannot be read on, with how much of it arrived: the app's
// OSError says it, and so does the log line when the app lets it escape.
std::string describe_failure(const boost::system::error_code& ec, std::uint64_t received,
                             const std::optional<std::uint64_t>& promised) {
    const std::string got = promised ? std::to_string(received) + " of " + std::to_string(*promised) + " bytes"
                                     : std::to_string(received) + " bytes of a chunked body";
    namespace error = boost::asio::error;
    if (ec == error::eof) return "the client shut down its sending side after " + got;
    if (ec == error::connection_reset) return "the connection was lost after " + got;
    if (ec == error::message_size) return "the body went over http.max_body_size after " + got;
    if (ec == error::timed_out) return "no more of the body came within http.body_timeout after " + got;
    if (ec == boost::system::errc::bad_message) return "malformed chunked framing after " + got;
    return ec.message() + " after " + got;
}
}  // namespace

body_reader::body_reader(http::exchange_ptr ex, completion_port& port, std::size_t piece, std::string pulled,
                         std::optional<std::uint64_t> promised, request_deadline* deadline)
    : ex_(std::move(ex)), port_(port), deadline_(deadline), piece_(piece), buf_(std::move(pulled)), received_(buf_.size()),
      promised_(promised) {}

bool body_reader::pull_one(std::size_t at_least) {
    if (pos_ >= compact_above && pos_ * 2 >= buf_.size()) {
        buf_.erase(0, pos_);
        pos_ = 0;
    }
    auto result = std::make_shared<pull_result>();
    // Held by the reactor-side callables: if one is destroyed without
    // running (the reactor torn down at a hard stop), the reader is released
    // instead of waiting forever.
    struct guard {
        explicit guard(std::shared_ptr<pull_result> p) : r(std::move(p)) {}
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
        std::shared_ptr<pull_result> r;
        bool ran = false;
        ~guard() {
            if (ran) return;
            {
                std::lock_guard lock(r->mutex);
                r->abandoned = r->ready = true;
            }
            r->ready_cv.notify_all();
        }
    };
    const std::size_t max = std::max(piece_, at_least);
    port_.post_fn([ex = ex_, max, g = std::make_shared<guard>(result)]() mutable {
        g->ran = true;
        auto delivered = std::make_shared<guard>(g->r);
        ex->read_body(max, [delivered](boost::system::error_code ec, std::string chunk, bool last) {
            delivered->ran = true;
            pull_result& r = *delivered->r;
            {
                std::lock_guard lock(r.mutex);
                r.ec = ec;
                r.chunk = std::move(chunk);
                r.last = last;
                r.ready = true;
            }
            r.ready_cv.notify_all();
        });
    });
    {
        // The client's pace, not the app's: not counted against its deadline.
        if (deadline_) deadline_->waiting_on_server(true);
        python::gil_release no_gil;
        std::unique_lock lock(result->mutex);
        result->ready_cv.wait(lock, [&] { return result->ready; });
    }
    if (deadline_) deadline_->waiting_on_server(false);
    if (result->abandoned || result->ec) {
        failed_ = true;
        client_failed_ = !result->abandoned;
        failure_ = result->abandoned ? "the server is stopping" : describe_failure(result->ec, received_, promised_);
        python::py_ref text(PyUnicode_FromFormat("request body: %s", failure_.c_str()));
        failure_exc_ = python::py_ref(text ? PyObject_CallOneArg(PyExc_OSError, text.get()) : nullptr);
        return raise_failure();
    }
    received_ += result->chunk.size();
    buf_.append(result->chunk);
    end_ = result->last;
    return true;
}

bool body_reader::raise_failure() const {
    // The same exception each time, so that whichever read's escapes the
    // app is known as the body's.
    if (failure_exc_)
        PyErr_SetObject(PyExc_OSError, failure_exc_.get());
    else
        PyErr_Format(PyExc_OSError, "request body: %s", failure_.c_str());  // it could not be made
    return false;
}

bool body_reader::client_failure_raised(PyObject* exc) const {
    if (!client_failed_ || !failure_exc_) return false;
    // Along `raise ... from` links, a few deep (a chain can be a cycle).
    for (int depth = 0; exc && depth < 8; ++depth) {
        if (exc == failure_exc_.get()) return true;
        PyObject* cause = PyException_GetCause(exc);
        Py_XDECREF(cause);  // still held by exc.__cause__
        exc = cause;
    }
    return false;
}

bool body_reader::fill(std::size_t want) {
    if (failed_) return raise_failure();
    while (!end_ && buf_.size() - pos_ < want)
        if (!pull_one(want - (buf_.size() - pos_))) return false;
    return true;
}

bool body_reader::fill_line(std::size_t limit) {
    if (failed_) return raise_failure();
    std::size_t scanned = 0;  // bytes after pos_ known to hold no '\n'
    while (!end_ && buf_.size() - pos_ < limit) {
        const std::size_t avail = buf_.size() - pos_;
        if (std::memchr(buf_.data() + pos_ + scanned, '\n', avail - scanned)) return true;
        scanned = avail;
        if (!pull_one(1)) return false;
    }
    return true;
}

PyObject* body_reader::take(std::size_t n) {
    n = std::min(n, buf_.size() - pos_);
    PyObject* r = PyBytes_FromStringAndSize(buf_.data() + pos_, static_cast<Py_ssize_t>(n));
    if (r) pos_ += n;
    return r;
}

PyObject* body_reader::read(Py_ssize_t size) {
    const std::size_t want = size < 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(size);
    if (!fill(want)) return nullptr;
    return take(want);
}

PyObject* body_reader::readline(Py_ssize_t limit) {
    const std::size_t max = limit < 0 ? std::numeric_limits<std::size_t>::max() : static_cast<std::size_t>(limit);
    if (!fill_line(max)) return nullptr;
    const std::size_t avail = std::min(max, buf_.size() - pos_);
    const void* nl = avail ? std::memchr(buf_.data() + pos_, '\n', avail) : nullptr;
    const std::size_t n = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - (buf_.data() + pos_)) + 1 : avail;
    return take(n);
}

}  // namespace m0::wsgi
