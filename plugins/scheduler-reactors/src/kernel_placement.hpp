#pragma once
// How the `reactors` scheduler's connections reach its reactors: the kernel
// places them. Each reactor accepts on its own SO_REUSEPORT socket (the
// kernel hashes the 4-tuple) or on one socket shared by all of them (the
// kernel wakes one idle reactor per connection).
#include <memory>
#include <vector>

#include <m0/reactors/reactor_group.hpp>
#include <m0/scheduler.hpp>

#include "reactor_listeners.hpp"

namespace m0::scheduler_reactors {

class kernel_placement final : public reactors::connection_placement {
public:
    // `strategy`: as configured (M0_REUSEPORT_WORKERS already applied).
    // Sockets handed over in the options decide instead: shared_fds make it
    // shared, reactor_fds reuseport.
    explicit kernel_placement(listener_strategy strategy) : strategy_(strategy) {}
    ~kernel_placement() override { close(); }

    std::vector<boost::asio::ip::tcp::endpoint> open(scheduler_options& options) override;
    std::vector<std::unique_ptr<reactors::reactor_listener>> listeners_for(unsigned reactor,
                                                                           boost::asio::io_context& io,
                                                                           reactor_stats& stats) override;
    void close() noexcept override;

private:
    listener_strategy strategy_;
    bool exclusive_ = false;
    std::vector<int> shared_fds_;                  // per address
    std::vector<std::vector<int>> reactor_fds_;    // per reactor, per address; -1 once a listener took it
    std::shared_ptr<shared_listener_peers> peers_ = std::make_shared<shared_listener_peers>();
};

}  // namespace m0::scheduler_reactors
