#pragma once
// A serving process's metrics sampler: a thread that, a few times a second,
// copies what the executors (executor::stats) and the plugins
// (serving_hooks::report_metrics) know into the process's slots of the
// metrics table, where whoever serves /metrics (this process or the
// supervisor) reads them. Executors and plugins are asked on this thread,
// never on a reactor, and the scrape never waits for them.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <m0/api.hpp>
#include <m0/executor.hpp>
#include <m0/serving.hpp>

#include "telemetry/metrics_table.hpp"

namespace m0::deadline {
class watchdog;
}

namespace m0::telemetry {

class M0_INTERNAL_API metrics_sampler {
public:
    static constexpr std::chrono::milliseconds interval{250};

    // `executors` in the table's executor order. All outlive the sampler.
    metrics_sampler(metrics_table& table, unsigned process, std::vector<const executor*> executors,
                    const serving_hooks& plugins);
    ~metrics_sampler();  // stop()
    metrics_sampler(const metrics_sampler&) = delete;
    metrics_sampler& operator=(const metrics_sampler&) = delete;

    // Takes the first sample on the calling thread, then one every interval
    // on a thread of its own.
    // The request deadlines of this process (before start()): their counts
    // join their executors' series. Null: none are watched.
    void watch_deadlines(const deadline::watchdog* dog) noexcept { deadlines_ = dog; }
    void start();
    // Takes a last sample (counters complete) and joins the thread.
    void stop();
    // One sample, on the calling thread.
    void sample();

private:
    void run();
    void sample_executor(std::size_t index, const executor_stats& st);

    metrics_table& table_;
    const unsigned process_;
    const std::vector<const executor*> executors_;
    const serving_hooks& plugins_;
    // What the counters were at the last sample (this process only): the
    // table's counters grow by the difference.
    std::vector<executor_stats> last_;
    const deadline::watchdog* deadlines_ = nullptr;
    struct deadline_counts {
        std::uint64_t hit = 0, written_off = 0, escalated = 0;
    };
    std::vector<deadline_counts> last_deadlines_;
    std::map<std::string, double> last_plugin_counters_;
    std::set<std::string> warned_;  // series refused, said once each
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace m0::telemetry
