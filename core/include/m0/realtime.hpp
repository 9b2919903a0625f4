#pragma once
// Realtime seam: the hub of the hold path (plugins/realtime-ws provides it as
// a service, m0/services.hpp). A frontend running a view on an executor thread
// holds the view's connection: it subscribes it to channels there and then,
// before the view returns, so that a message published once the view has
// returned cannot be missed; the reactor attaches the exchange when the job
// completes and the hold writes every message published on its channels.
// A WebSocket hold (hold_mode::ws) also reads: each inbound message goes to
// the frontend's inbound_handler, and the application answers through the
// hold's `connection` from any thread.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include <m0/http.hpp>

namespace m0::realtime {

enum class hold_mode {
    sse,   // 200 text/event-stream, one event per message, until the client leaves
    poll,  // the first message is the 200 body; none within the timeout: 204
    ws,    // 101 and a WebSocket session: each message is one frame, inbound ones go to the inbound_handler
};

// What a message is on a WebSocket: a text frame (str in Python) or a binary
// one (bytes). SSE and long-poll send the bytes either way.
enum class payload_kind { text, binary };

// A WebSocket hold as the application sees it. Every call: any thread, never
// waits for the client; calls after the connection ended do nothing.
class connection {
public:
    virtual ~connection() = default;
    // Unique within the process.
    virtual std::uint64_t id() const noexcept = 0;
    // This connection alone, through its outbox like a publish.
    virtual void send(std::string_view data, payload_kind kind) = 0;
    // Adds (removes) a channel: a publish that starts after subscribe()
    // returned reaches the connection.
    virtual void subscribe(std::string_view channel) = 0;
    virtual void unsubscribe(std::string_view channel) = 0;
    // Starts the close handshake (a code a server may send: 1000-1003,
    // 1007-1014, 3000-4999).
    virtual void close(std::uint16_t code, std::string_view reason) = 0;
    // The hold's reactor thread only: the inbound_handler caught up after
    // on_message returned false; reading the peer resumes.
    virtual void resume_reading() = 0;
};

// The frontend's end of a WebSocket hold: receives its inbound messages.
// Reactor thread of the hold.
class inbound_handler {
public:
    virtual ~inbound_handler() = default;
    // One message, in arrival order; the handler keeps that order wherever
    // it runs the application (an executor). False when it is behind: the
    // hold stops reading the peer (TCP slows it) until conn->resume_reading().
    virtual bool on_message(const std::shared_ptr<connection>& conn, payload_kind kind, std::string data) = 0;
    // The connection ended (`code`: as websocket::session's close handler);
    // no message follows.
    virtual void on_close(std::uint16_t code) = 0;
};

struct hold_options {
    hold_mode mode = hold_mode::sse;
    std::vector<std::string> channels;
    // poll: how long to wait for a message (none: until drain or the client leaves).
    std::optional<std::chrono::milliseconds> timeout;
    // ws: receives the inbound messages (null: they are read and dropped).
    std::shared_ptr<inbound_handler> inbound;
};

// A subscribed connection that the reactor has not attached yet. Messages
// published meanwhile wait in its outbox.
class pending_hold {
public:
    virtual ~pending_hold() = default;
};

// What the bus under the hub counted in this process (realtime.bus).
struct bus_stats {
    std::uint64_t published = 0;   // publishes the bus took (redis: confirmed by the server)
    std::uint64_t delivered = 0;   // messages that arrived from the bus for this process's holds
    std::uint64_t lost = 0;        // publishes dropped: bus unreachable, queue full, unconfirmed at a disconnect
    std::uint64_t reconnects = 0;  // connections to the bus made again after one was lost
};

class hub {
public:
    static constexpr std::string_view service_name = "m0.realtime.hub";
    static constexpr unsigned service_version = 1;
    virtual ~hub() = default;

    // Any thread; never waits for a client. `event` names an SSE event;
    // `kind` picks the WebSocket frame (text or binary).
    virtual void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                         payload_kind kind = payload_kind::text) = 0;

    // Any thread: why `req` is not a WebSocket handshake the hub would
    // accept for a ws hold, or nothing when it is.
    virtual std::optional<std::string> check_websocket(const http::request& req) const = 0;

    // Any thread (the executor thread running the view): subscribes now.
    // `reactor` is the io_context of the reactor that owns the request. Null
    // if that reactor is not serving (stopping).
    virtual std::shared_ptr<pending_hold> subscribe(boost::asio::io_context& reactor, hold_options options) = 0;

    // The reactor thread, when the view's job completes: the hold takes the
    // exchange and answers it (`headers` are the view's extra ones, such as
    // Set-Cookie). The hold then lives until it ends.
    virtual void attach(std::shared_ptr<pending_hold> hold, http::exchange_ptr ex,
                        std::vector<http::response_header> headers) = 0;

    // The reactor thread: the view failed after subscribing; unsubscribe.
    virtual void cancel(std::shared_ptr<pending_hold> hold) = 0;

    // Any thread: the bus's counters so far.
    virtual bus_stats stats() const = 0;
};

}  // namespace m0::realtime
