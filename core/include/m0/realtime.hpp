#pragma once
// Realtime seam: the hub of the hold path (plugins/realtime-ws provides it as
// a service, m0/services.hpp). A frontend running a view on an executor thread
// holds the view's connection: it subscribes it to channels there and then,
// before the view returns, so that a message published once the view has
// returned cannot be missed; the reactor attaches the exchange when the job
// completes and the hold writes every message published on its channels.
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
};

struct hold_options {
    hold_mode mode = hold_mode::sse;
    std::vector<std::string> channels;
    // poll: how long to wait for a message (none: until drain or the client leaves).
    std::optional<std::chrono::milliseconds> timeout;
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

    // Any thread; never waits for a client. `event` names an SSE event.
    virtual void publish(std::string_view channel, std::string_view data,
                         std::optional<std::string_view> event) = 0;

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
