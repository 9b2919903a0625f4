#include "line_frontend.hpp"

#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

namespace m0::test {
namespace {

using boost::asio::ip::tcp;
using boost::system::error_code;

struct worker_state;

struct session : std::enable_shared_from_this<session> {
    session(tcp::socket s, worker_state& w) : socket(std::move(s)), timer(socket.get_executor()), worker(w) {}
    void read();
    void close(bool forced);
    tcp::socket socket;
    boost::asio::steady_timer timer;
    boost::asio::streambuf buffer;
    std::string reply;
    worker_state& worker;
    bool busy = false;
    bool closed = false;
};

struct worker_state {
    reactor_context* ctx;
    line_frontend* frontend;
    std::set<std::shared_ptr<session>> sessions;
    bool draining = false;

    void accept(listener& l) {
        l.async_accept([this, &l](error_code ec, tcp::socket s) {
            if (ec) return;  // drained (operation_aborted) or closed
            ctx->stats->accepted.fetch_add(1, std::memory_order_relaxed);
            ctx->stats->live_connections.fetch_add(1, std::memory_order_relaxed);
            auto sp = std::make_shared<session>(std::move(s), *this);
            sessions.insert(sp);
            sp->read();
            accept(l);
        });
    }
};

void session::close(bool forced) {
    if (closed) return;
    closed = true;
    if (forced) worker.ctx->stats->force_closed.fetch_add(1, std::memory_order_relaxed);
    if (busy) worker.ctx->stats->in_flight.fetch_sub(1, std::memory_order_relaxed);
    error_code ec;
    socket.close(ec);
    timer.cancel();
    worker.ctx->stats->live_connections.fetch_sub(1, std::memory_order_relaxed);
    worker.ctx->stats->closed.fetch_add(1, std::memory_order_seq_cst);
    worker.sessions.erase(shared_from_this());
}

void session::read() {
    auto self = shared_from_this();
    boost::asio::async_read_until(socket, buffer, '\n', [this, self](error_code ec, std::size_t n) {
        if (closed) return;
        if (ec) return close(false);
        std::string line(boost::asio::buffers_begin(buffer.data()), boost::asio::buffers_begin(buffer.data()) + n - 1);
        buffer.consume(n);
        std::string who = std::to_string(worker.ctx->index);
        if (line == "throw") throw std::runtime_error("test frontend asked to crash");
        auto respond = [this, self](std::string text) {
            reply = std::move(text);
            boost::asio::async_write(socket, boost::asio::buffer(reply), [this, self](error_code ec, std::size_t) {
                if (closed) return;
                if (busy) {
                    busy = false;
                    worker.ctx->stats->in_flight.fetch_sub(1, std::memory_order_relaxed);
                }
                worker.ctx->stats->requests.fetch_add(1, std::memory_order_relaxed);
                if (ec || worker.draining) return close(false);
                read();
            });
        };
        busy = true;
        worker.ctx->stats->in_flight.fetch_add(1, std::memory_order_relaxed);
        if (line == "hold") {
            worker.frontend->wait_for_release();
            respond("held " + who + "\n");
        } else if (line.rfind("slow ", 0) == 0) {
            timer.expires_after(std::chrono::milliseconds(std::stoi(line.substr(5))));
            timer.async_wait([this, self, respond, who](error_code ec) {
                if (closed || ec) return;
                respond("done " + who + "\n");
            });
        } else {
            respond("ok " + who + "\n");
        }
    });
}

}  // namespace

void line_frontend::start_reactor(reactor_context& ctx) {
    if (static_cast<int>(ctx.index) == fail_worker_) throw std::runtime_error("test frontend refused to start");
    // Owned by the worker's io_context lifetime: freed in stop_reactor-free
    // fashion by a shared_ptr captured in the drain hooks.
    auto state = std::make_shared<worker_state>();
    state->ctx = &ctx;
    state->frontend = this;
    for (auto* l : ctx.listeners) state->accept(*l);
    ctx.add_drain_hook([state] {
        state->draining = true;
        auto copy = state->sessions;
        for (auto& s : copy)
            if (!s->busy) s->close(false);
    });
    ctx.add_force_close_hook([state] {
        auto copy = state->sessions;
        for (auto& s : copy) s->close(true);
    });
}

void line_frontend::release_holds() {
    {
        std::lock_guard lock(hold_mutex_);
        holds_released_ = true;
    }
    hold_released_cv_.notify_all();
}

void line_frontend::wait_for_release() {
    std::unique_lock lock(hold_mutex_);
    hold_released_cv_.wait(lock, [this] { return holds_released_; });
}

}  // namespace m0::test
