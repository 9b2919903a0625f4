#pragma once
// The `realtime` module: provides the hub service (m0/realtime.hpp) over an
// in-process bus. A publish looks up the channel's holds once, groups them
// by reactor and posts one task per reactor carrying the shared message.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <m0/module.hpp>
#include <m0/plugin.hpp>
#include <m0/realtime.hpp>

#include "held_connection.hpp"
#include "realtime_settings.hpp"

namespace m0::realtime {

class realtime_module final : public module, public hub {
public:
    // Reads the section and registers the hub; throws config_error.
    explicit realtime_module(plugin_context& ctx);

    void publish(std::string_view channel, std::string_view data, std::optional<std::string_view> event) override;
    std::shared_ptr<pending_hold> subscribe(boost::asio::io_context& reactor, hold_options options) override;
    void attach(std::shared_ptr<pending_hold> hold, http::exchange_ptr ex,
                std::vector<http::response_header> headers) override;
    void cancel(std::shared_ptr<pending_hold> hold) override;

    void start_reactor(reactor_context& ctx) override;
    void stop_reactor(reactor_context& ctx) override;
    void stop_serving(serving_context& ctx) override;
    void report_metrics(metrics_writer& out) const override;

private:
    struct shard {
        boost::asio::io_context* io = nullptr;
        std::shared_ptr<reactor_handle> reactor;
    };
    void unsubscribe(held_connection& h);

    const settings config_;
    hold_counters counters_;
    std::mutex mutex_;  // guards shards_ and channels_
    std::vector<shard> shards_;
    std::unordered_map<std::string, std::vector<std::shared_ptr<held_connection>>> channels_;
};

}  // namespace m0::realtime
