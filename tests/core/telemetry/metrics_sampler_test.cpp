#define BOOST_TEST_MODULE metrics_sampler
// The sampler's way into the metrics table, and how the table sums what it
// wrote: executor gauges over the processes serving, counters over every
// process that served (a replaced one carries on), plugin series merged by
// name and labels, refused when they are not Prometheus names.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include <m0/executor.hpp>
#include <m0/serving.hpp>

#include "telemetry/metrics_sampler.hpp"
#include "telemetry/metrics_table.hpp"

using namespace m0;
using namespace m0::telemetry;

namespace {

// An executor whose stats the test sets.
class fixed_executor final : public executor {
public:
    std::string_view name() const override { return "fixed"; }
    void add_thread_hooks(thread_hooks) override {}
    void start() override {}
    std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker>) override { return nullptr; }
    unsigned stop(std::chrono::milliseconds) override { return 0; }
    executor_stats stats() const override { return st; }
    executor_stats st;
};

// A plugin reporting what the test sets.
class reporter final : public serving_hooks {
public:
    void report_metrics(metrics_writer& out) const override {
        out.gauge("m0_test_open", "Things open.", open);
        out.counter("m0_test_sent_total", "Things sent.", sent, {{"kind", "a\"b"}});
        out.counter("bad name", "Refused.", 1);
    }
    double open = 0, sent = 0;
};

executor_stats busy_pool(std::uint64_t busy, std::uint64_t done) {
    executor_stats st;
    st.threads = 4;
    st.threads_busy = busy;
    st.threads_parked = 4 - busy;
    st.threads_blocked = busy - 1;  // of the busy ones
    st.queue_depth = 1;
    st.jobs_done = done;
    queue_wait_histogram w;
    w.buckets[0] = done;
    w.sum_ns = done * 1000;
    st.queue_wait = w;
    return st;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(executor_and_plugin_series_summed_over_processes) {
    metrics_table table(2, 1, {{"", "http"}}, {{"app", "pool"}});
    fixed_executor ex;
    reporter plugin;
    const std::string labels = "executor=\"app\",type=\"pool\"";

    // Process 0 serves (this test's pid); process 1 served and is gone.
    table.process_started(0, static_cast<int>(::getpid()));
    ex.st = busy_pool(3, 10);
    plugin.open = 2;
    plugin.sent = 5;
    metrics_sampler(table, 0, {&ex}, plugin).sample();
    table.process_started(1, static_cast<int>(::getpid()));
    ex.st = busy_pool(1, 7);
    metrics_sampler(table, 1, {&ex}, plugin).sample();
    table.process_ended(1);

    const std::string text = table.prometheus();
    BOOST_TEST_INFO(text);
    // Gauges: process 0 only. Counters: both.
    BOOST_TEST(contains(text, "m0_executor_threads{" + labels + ",state=\"busy\"} 3\n"));
    BOOST_TEST(contains(text, "m0_executor_threads{" + labels + ",state=\"parked\"} 1\n"));
    BOOST_TEST(contains(text, "m0_executor_threads{" + labels + ",state=\"idle\"} 0\n"));
    BOOST_TEST(contains(text, "m0_executor_threads{" + labels + ",state=\"blocked\"} 2\n"));
    BOOST_TEST(contains(text, "m0_executor_queue_depth{" + labels + "} 1\n"));
    BOOST_TEST(contains(text, "m0_executor_jobs_done_total{" + labels + "} 17\n"));
    BOOST_TEST(contains(text, "m0_executor_queue_wait_seconds_count{" + labels + "} 17\n"));
    BOOST_TEST(!contains(text, "m0_executor_loop_lag_seconds"));  // nobody reports it
    BOOST_TEST(contains(text, "# TYPE m0_test_open gauge\nm0_test_open 2\n"));
    BOOST_TEST(contains(text, "# TYPE m0_test_sent_total counter\nm0_test_sent_total{kind=\"a\\\"b\"} 10\n"));
    BOOST_TEST(!contains(text, "bad name"));

    const std::string json = table.status_json();
    BOOST_TEST_INFO(json);
    BOOST_TEST(contains(json, "\"executors\":[{\"name\":\"app\",\"type\":\"pool\",\"threads\":4,\"busy\":3,"
                              "\"parked\":1,\"blocked\":2,\"queue_depth\":1,\"jobs_done\":17,"));
    BOOST_TEST(contains(json, "\"loop_lag_seconds\":null}"));
    BOOST_TEST(contains(json, "{\"name\":\"m0_test_sent_total\",\"type\":\"counter\",\"labels\":{\"kind\":\"a\\\"b\"},"
                              "\"value\":10}"));
}

BOOST_AUTO_TEST_CASE(a_replaced_process_carries_its_counters_on) {
    metrics_table table(1, 1, {{"", "http"}}, {{"default", "pool"}});
    fixed_executor ex;
    reporter plugin;
    table.process_started(0, static_cast<int>(::getpid()));
    {
        metrics_sampler first(table, 0, {&ex}, plugin);
        ex.st = busy_pool(0, 4);
        plugin.sent = 3;
        first.sample();
        ex.st = busy_pool(0, 6);  // grew by 2 since the last sample
        plugin.sent = 4;
        first.sample();
    }
    // Its successor starts counting from 0 again; the table does not go down.
    table.process_started(0, static_cast<int>(::getpid()));
    metrics_sampler second(table, 0, {&ex}, plugin);
    ex.st = busy_pool(0, 1);
    plugin.sent = 1;
    second.sample();
    const std::string text = table.prometheus();
    BOOST_TEST_INFO(text);
    BOOST_TEST(contains(text, "m0_executor_jobs_done_total{executor=\"default\",type=\"pool\"} 7\n"));
    BOOST_TEST(contains(text, "m0_test_sent_total{kind=\"a\\\"b\"} 5\n"));
}

BOOST_AUTO_TEST_CASE(an_executor_without_stats_has_no_series) {
    metrics_table table(1, 1, {{"", "http"}}, {{"default", "custom"}});
    class silent final : public executor {
        std::string_view name() const override { return "custom"; }
        void add_thread_hooks(thread_hooks) override {}
        void start() override {}
        std::unique_ptr<executor_lane> make_lane(std::shared_ptr<reactor_waker>) override { return nullptr; }
        unsigned stop(std::chrono::milliseconds) override { return 0; }
    } ex;
    serving_hooks nothing;
    table.process_started(0, static_cast<int>(::getpid()));
    metrics_sampler(table, 0, {&ex}, nothing).sample();
    BOOST_TEST(!contains(table.prometheus(), "type=\"custom\""));  // no executor-labelled series
    BOOST_TEST(contains(table.status_json(), "\"executors\":[{\"name\":\"default\",\"type\":\"custom\",\"threads\":null,"));
}
