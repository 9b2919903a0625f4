#include "ws_dispatcher.hpp"

#include <vector>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/ref.hpp>
#include <m0/websocket/frame.hpp>

#include "connection_object.hpp"
#include "wsgi_call.hpp"

namespace m0::wsgi {

// The messages queued when it was submitted, in order; with `release`, the
// connection ended and the job lets go of the Python objects afterwards
// (only an executor thread takes the GIL).
class ws_dispatcher::batch_job final : public job {
public:
    batch_job(std::shared_ptr<ws_dispatcher> d, std::deque<inbound> batch, bool release)
        : d_(std::move(d)), batch_(std::move(batch)), release_(release) {
        for (const auto& m : batch_) bytes_ += m.data.size() + 1;
    }

    void run(completion_port&) noexcept override {
        python::gil_scope gil;
        for (const auto& m : batch_) {
            if (d_->failed_.load(std::memory_order_relaxed) || !d_->call(m)) break;
        }
        if (release_) d_->release_python();
    }

    void complete(bool cancelled) noexcept override {
        d_->busy_ = false;
        d_->backlog_ -= bytes_;
        if (d_->reading_paused_ && d_->backlog_ <= max_backlog / 2 && d_->conn_) {
            d_->reading_paused_ = false;
            d_->conn_->resume_reading();
        }
        if (cancelled) {
            // The executor is stopping: nothing runs Python for this
            // connection any more (its objects are left to the interpreter's end).
            d_->stopped_ = true;
            return;
        }
        d_->dispatch();
    }

private:
    std::shared_ptr<ws_dispatcher> d_;
    std::deque<inbound> batch_;
    std::size_t bytes_ = 0;  // counted in the dispatcher's backlog (+1: an empty message counts too)
    bool release_;
};

ws_dispatcher::ws_dispatcher(executor_lane& lane, PyObject* on_message, std::string where, deadline_watch* deadlines)
    : lane_(lane), where_(std::move(where)), deadlines_(deadlines), on_message_(Py_NewRef(on_message)) {}

ws_dispatcher::~ws_dispatcher() = default;

bool ws_dispatcher::on_message(const std::shared_ptr<realtime::connection>& conn, realtime::payload_kind kind,
                               std::string data) {
    if (closed_ || failed_.load(std::memory_order_relaxed)) return true;
    if (!conn_) conn_ = conn;
    backlog_ += data.size() + 1;
    queue_.push_back(inbound{kind, std::move(data)});
    dispatch();
    if (backlog_ > max_backlog) reading_paused_ = true;
    return !reading_paused_;
}

void ws_dispatcher::on_close(std::uint16_t) {
    closed_ = true;
    dispatch();
}

void ws_dispatcher::dispatch() {
    if (busy_ || stopped_ || released_) return;
    if (queue_.empty() && !closed_) return;
    busy_ = true;
    released_ = closed_;
    if (deadlines_) {
        // One deadline per message; past it the peer hears 1011 (there is
        // no response to answer with).
        for (auto& m : queue_)
            m.deadline = deadlines_->watch_call(where_ + ": on_message", [conn = conn_] {
                if (conn) conn->close(websocket::close_code::internal_error, "on_message passed its deadline");
            });
    }
    // Submitted once the flags are set: the inline executor completes the
    // job inside submit().
    lane_.submit(std::make_unique<batch_job>(shared_from_this(), std::exchange(queue_, {}), closed_));
}

bool ws_dispatcher::call(const inbound& m) {
    if (m.deadline) {
        PyThreadState* tstate = PyThreadState_Get();
        m.deadline->started([tstate] { return where_stuck(tstate); });
    }
    struct finish_deadline {
        const inbound& m;
        ~finish_deadline() {
            if (m.deadline) m.deadline->finished();
        }
    } finish{m};
    if (!conn_object_) conn_object_ = make_connection_object(conn_);
    python::py_ref message(m.kind == realtime::payload_kind::binary
                               ? PyBytes_FromStringAndSize(m.data.data(), static_cast<Py_ssize_t>(m.data.size()))
                               // The session checked the UTF-8 of every text message.
                               : PyUnicode_DecodeUTF8(m.data.data(), static_cast<Py_ssize_t>(m.data.size()), nullptr));
    python::py_ref result;
    if (conn_object_ && message) {
        PyObject* args[2] = {conn_object_, message.get()};
        result = python::py_ref(PyObject_Vectorcall(on_message_, args, 2, nullptr));
    }
    if (result) return true;
    python::log_exception(where_ + ": on_message raised");
    failed_.store(true, std::memory_order_relaxed);
    conn_->close(websocket::close_code::internal_error, "on_message raised");
    return false;
}

void ws_dispatcher::release_python() noexcept {
    Py_CLEAR(conn_object_);
    Py_CLEAR(on_message_);
}

}  // namespace m0::wsgi
