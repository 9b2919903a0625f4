#include "telemetry/metrics_sampler.hpp"

#include "deadline/watchdog.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <set>

#include <m0/log.hpp>
#include <m0/metrics.hpp>

#include "telemetry/signal_free_thread.hpp"

namespace m0::telemetry {

namespace {

bool valid_name(std::string_view s, bool colon) {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
                        (i > 0 && c >= '0' && c <= '9');
        if (!ok) return false;
    }
    return true;
}

void copy_text(char* to, std::size_t size, std::string_view from) {
    const std::size_t n = std::min(from.size(), size - 1);
    for (std::size_t i = 0; i < n; ++i) to[i] = (from[i] == '\n' || from[i] == '\r') ? ' ' : from[i];
    to[n] = '\0';
}

// Adds to a counter this thread alone writes: a load and a store.
template <class T, class U>
void add(std::atomic<T>& a, U n) noexcept {
    a.store(a.load(std::memory_order_relaxed) + static_cast<T>(n), std::memory_order_relaxed);
}

std::uint64_t grown(std::uint64_t now, std::uint64_t before) { return now >= before ? now - before : now; }

// What a plugin reports goes into its process's series table.
class series_writer final : public metrics_writer {
public:
    series_writer(plugin_series_table& table, std::map<std::string, double>& last, std::set<std::string>& warned)
        : table_(table), last_(last), warned_(warned) {}

    void counter(std::string_view name, std::string_view help, double value,
                 std::initializer_list<metric_label> labels) override {
        write(plugin_series::counter, name, help, value, labels);
    }
    void gauge(std::string_view name, std::string_view help, double value,
               std::initializer_list<metric_label> labels) override {
        write(plugin_series::gauge, name, help, value, labels);
    }

private:
    void write(plugin_series::kind_t kind, std::string_view name, std::string_view help, double value,
               std::initializer_list<metric_label> labels) {
        std::string stored;
        bool ok = valid_name(name, true) && name.size() < plugin_series::name_size;
        for (const auto& l : labels) {
            ok = ok && valid_name(l.name, false) && l.value.find('\x1f') == std::string_view::npos;
            stored.append(l.name).append("=").append(l.value).push_back('\x1f');
        }
        ok = ok && stored.size() < plugin_series::labels_size;
        if (!ok) return refuse(name, "its name or labels are not valid Prometheus ones, or too long");
        plugin_series* entry = find(name, stored);
        if (!entry) {
            const std::uint32_t n = table_.count.load(std::memory_order_relaxed);
            if (n >= plugin_series_table::capacity) return refuse(name, "the process reports too many series");
            entry = &table_.entries[n];
            copy_text(entry->name, sizeof entry->name, name);
            copy_text(entry->labels, sizeof entry->labels, stored);
            copy_text(entry->help, sizeof entry->help, help);
            entry->kind = kind;
            entry->value.store(0, std::memory_order_relaxed);
            table_.count.store(n + 1, std::memory_order_release);  // publishes the text fields
        }
        if (entry->kind != kind) return refuse(name, "it was reported both as a counter and as a gauge");
        if (kind == plugin_series::gauge) {
            entry->value.store(value, std::memory_order_relaxed);
            return;
        }
        double& before = last_[std::string(name) + '\x1e' + stored];
        add(entry->value, value >= before ? value - before : value);
        before = value;
    }

    plugin_series* find(std::string_view name, std::string_view labels) {
        const std::uint32_t n = table_.count.load(std::memory_order_relaxed);
        for (std::uint32_t i = 0; i < n; ++i) {
            auto& e = table_.entries[i];
            if (name == e.name && labels == e.labels) return &e;
        }
        return nullptr;
    }

    void refuse(std::string_view name, std::string_view why) {
        if (warned_.insert(std::string(name)).second)
            log::warning("metrics: a plugin's series '" + std::string(name) + "' is left out: " + std::string(why));
    }

    plugin_series_table& table_;
    std::map<std::string, double>& last_;
    std::set<std::string>& warned_;
};

}  // namespace

metrics_sampler::metrics_sampler(metrics_table& table, unsigned process, std::vector<const executor*> executors,
                                 const serving_hooks& plugins)
    : table_(table), process_(process), executors_(std::move(executors)), plugins_(plugins),
      last_(executors_.size()) {}

metrics_sampler::~metrics_sampler() { stop(); }

void metrics_sampler::start() {
    // The first sample before m0 says it serves: a scrape from then on finds
    // every executor's series (a family is written only once sampled).
    sample();
    thread_ = start_signal_free_thread([this] { run(); });
}

void metrics_sampler::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    wake_.notify_all();
    if (!thread_.joinable()) return;
    thread_.join();
    sample();
}

void metrics_sampler::run() {
    pthread_setname_np(pthread_self(), "m0-metrics-smp");
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
        lock.unlock();
        sample();
        lock.lock();
    }
}

void metrics_sampler::sample() {
    for (std::size_t i = 0; i < executors_.size(); ++i) sample_executor(i, executors_[i]->stats());
    series_writer writer(table_.plugin_series_of(process_), last_plugin_counters_, warned_);
    plugins_.report_metrics(writer);
}

void metrics_sampler::sample_executor(std::size_t index, const executor_stats& st) {
    auto& slot = table_.executor(process_, index);
    auto& last = last_[index];
    using f = executor_slot::field;
    std::uint32_t known = 0;
    auto gauge = [&](const std::optional<std::uint64_t>& v, std::atomic<std::uint64_t>& into, std::uint32_t bit) {
        if (!v) return;
        known |= bit;
        into.store(*v, std::memory_order_relaxed);
    };
    gauge(st.threads, slot.threads, f::has_threads);
    gauge(st.threads_busy, slot.busy, f::has_busy);
    gauge(st.threads_parked, slot.parked, f::has_parked);
    gauge(st.threads_blocked, slot.blocked, f::has_blocked);
    gauge(st.queue_depth, slot.queue_depth, f::has_queue_depth);
    gauge(st.threads_written_off, slot.written_off_now, f::has_written_off);
    if (deadlines_ && index < deadlines_->executor_count()) {
        known |= f::has_deadlines;
        if (last_deadlines_.size() <= index) last_deadlines_.resize(index + 1);
        auto& before = last_deadlines_[index];
        const auto& now = deadlines_->counts(index);
        const deadline_counts seen{now.hit.load(std::memory_order_relaxed),
                                   now.written_off.load(std::memory_order_relaxed),
                                   now.escalated.load(std::memory_order_relaxed)};
        add(slot.deadlines, grown(seen.hit, before.hit));
        add(slot.threads_written_off, grown(seen.written_off, before.written_off));
        add(slot.processes_given_up, grown(seen.escalated, before.escalated));
        before = seen;
    }
    if (st.loop_lag) {
        known |= f::has_loop_lag;
        slot.loop_lag_ns.store(st.loop_lag->count(), std::memory_order_relaxed);
    }
    if (st.jobs_done) {
        known |= f::has_jobs_done;
        add(slot.jobs_done, grown(*st.jobs_done, last.jobs_done.value_or(0)));
    }
    if (st.queue_wait) {
        known |= f::has_queue_wait;
        const queue_wait_histogram before = last.queue_wait.value_or(queue_wait_histogram{});
        for (std::size_t b = 0; b < slot.wait.size(); ++b)
            add(slot.wait[b], grown(st.queue_wait->buckets[b], before.buckets[b]));
        add(slot.wait_sum_ns, grown(st.queue_wait->sum_ns, before.sum_ns));
    }
    slot.known.fetch_or(known, std::memory_order_relaxed);
    last = st;
}

}  // namespace m0::telemetry
