#pragma once
// The engine on one worker: the accept loop over the worker's listeners, the
// set of open sessions, drain and force-close. Reactor-thread only.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include <m0/http.hpp>
#include <m0/reactor.hpp>

#include "http/client_policy.hpp"
#include "http/date_cache.hpp"
#include "http1/session.hpp"

namespace m0::http::detail {

class server : public std::enable_shared_from_this<server> {
public:
    server(reactor_context& ctx, handler& h);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    void start();
    void drain();
    void force_close();

    bool draining() const noexcept { return draining_; }
    handler& app() noexcept { return handler_; }
    const http_limits& limits() const noexcept { return *limits_; }
    reactor_stats& stats() noexcept { return *stats_; }
    // The access log and metrics of this reactor; null when both are off.
    request_recorder* recorder() const noexcept { return recorder_; }
    // PROXY protocol listeners and trusted proxies; null: none.
    const client_policy* clients() const noexcept { return clients_; }
    unsigned reactor_index() const noexcept { return reactor_index_; }
    boost::asio::io_context& io() noexcept { return io_; }
    std::string_view date() noexcept { return date_.get(); }
    // Longest a connection's timer may sleep without missing a deadline.
    std::chrono::steady_clock::duration tick() const noexcept { return tick_; }
    // How long a closing connection keeps reading so the client sees its
    // response instead of a reset.
    std::chrono::milliseconds linger_timeout() const noexcept { return linger_; }

    void session_opened(connection& c);
    // resume: accept again if a slot freed up (false while being torn down).
    void session_closed(connection& c, bool resume);
    // An HTTP/1.1 session that found its client speaks HTTP/2 hands the
    // connection to `to`: one connection still, counted once.
    void session_handed_over(connection& from, connection& to);

private:
    struct listener_slot {
        listener* source = nullptr;
        bool proxy_protocol = false;  // connections start with a PROXY header
        bool tls = false;             // connections speak TLS
        bool http2 = false;           // and may speak HTTP/2
        // The address its connections arrive at, when the listener is bound
        // to one (not a wildcard): every accepted socket's own, so sessions
        // need no getsockname. Unspecified otherwise.
        boost::asio::ip::tcp::endpoint local;
        bool accepting = false;
        std::unique_ptr<boost::asio::steady_timer> retry;
        // Accepted in this burst, sessions not started yet.
        std::vector<boost::asio::ip::tcp::socket> burst;
        std::uint64_t burst_mark = 0;  // the newest end-of-burst check posted
    };

    void accept_next(std::size_t i);
    void on_accept(std::size_t i, const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
    void start_burst(std::size_t i);
    std::size_t connections() const noexcept;

    boost::asio::io_context& io_;
    handler& handler_;
    const http_limits* limits_;
    reactor_stats* stats_;
    request_recorder* recorder_;
    const client_policy* clients_;
    unsigned reactor_index_;
    http_limits default_limits_;
    reactor_stats own_stats_;  // when the caller publishes none
    std::vector<listener_slot> listeners_;
    boost::intrusive::list<connection> sessions_;
    date_cache date_;
    std::chrono::steady_clock::duration tick_;
    std::chrono::milliseconds linger_;
    bool draining_ = false;
};

}  // namespace m0::http::detail
