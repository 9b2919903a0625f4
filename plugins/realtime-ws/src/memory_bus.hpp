#pragma once
// The in-process bus: a publish goes straight to this process's holds, on the
// publisher's thread.
#include <atomic>
#include <cstdint>

#include "bus.hpp"

namespace m0::realtime {

class memory_bus final : public bus {
public:
    void start(sink deliver) override { deliver_ = std::move(deliver); }
    void stop() override {}
    void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event,
                 payload_kind kind) override {
        published_.fetch_add(1, std::memory_order_relaxed);
        if (!deliver_) return;
        bus_message m{channel, data, event, kind};
        deliver_(std::span(&m, 1));
    }
    void subscribe(std::string_view) override {}
    void unsubscribe(std::string_view) override {}
    bus_stats stats() const override {
        auto n = published_.load(std::memory_order_relaxed);
        return {.published = n, .delivered = n};
    }
    std::string describe() const override { return "memory"; }

private:
    sink deliver_;
    std::atomic<std::uint64_t> published_{0};
};

}  // namespace m0::realtime
