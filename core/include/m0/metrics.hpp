#pragma once
// Metrics a plugin adds to /metrics and /status.json (`metrics.listen`): a
// frontend or module reports its own numbers through serving_hooks::
// report_metrics, which the core calls on each serving process's metrics
// sampler. The core keeps them in memory shared with the supervisor and sums
// them over the processes of `server.workers`.
#include <initializer_list>
#include <string_view>

namespace m0 {

struct metric_label {
    std::string_view name;   // [a-zA-Z_][a-zA-Z0-9_]*
    std::string_view value;  // any text
};

class metrics_writer {
public:
    virtual ~metrics_writer() = default;
    // `name` in Prometheus syntax ([a-zA-Z_:][a-zA-Z0-9_:]*), prefixed m0_
    // and the plugin's name (m0_realtime_...); counters end in _total.
    // `help` is one line. A name or label that does not fit is dropped, and
    // said once in the log. A series (name and labels) keeps its kind.
    //
    // A number that only grows over the process's life (messages delivered).
    // Summed over processes; a replaced process carries on from its
    // predecessor's count, so it never goes down.
    virtual void counter(std::string_view name, std::string_view help, double value,
                         std::initializer_list<metric_label> labels = {}) = 0;
    // A number that goes up and down (holds open). Summed over the
    // processes serving now.
    virtual void gauge(std::string_view name, std::string_view help, double value,
                       std::initializer_list<metric_label> labels = {}) = 0;
};

}  // namespace m0
