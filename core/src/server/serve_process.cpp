#include "server/serve_process.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <m0/log.hpp>
#include <m0/scheduler.hpp>
#include <m0/version.hpp>

#include "deadline/watchdog.hpp"
#include "http/client_policy.hpp"
#include "server/pid_file.hpp"
#include "server/process_signals.hpp"
#include "server/sd_notify.hpp"
#include "server/supervisor.hpp"
#include "telemetry/access_log_sink.hpp"
#include "telemetry/metrics_sampler.hpp"
#include "telemetry/request_recorder.hpp"

namespace m0 {
namespace {

// A reactor's counters (a slot of the metrics table, when metrics are on)
// and its recorder of finished responses (access log, metrics).
class core_reactor_telemetry final : public reactor_telemetry {
public:
    core_reactor_telemetry(telemetry::reactor_slot* slot, std::unique_ptr<request_recorder> recorder)
        : slot_(slot), recorder_(std::move(recorder)) {}
    reactor_stats* stats() noexcept override { return slot_ ? &slot_->stats : nullptr; }
    request_recorder* recorder() noexcept override { return recorder_.get(); }
    void loop_ended() noexcept override { recorder_->stop(); }

private:
    telemetry::reactor_slot* slot_;
    std::unique_ptr<request_recorder> recorder_;
};

void print_reports(const std::vector<reactor_report>& reports) {
    for (const auto& r : reports) {
        std::ostringstream line;
        line << "reactor " << r.index << ": accepted " << r.accepted << ", requests " << r.requests
             << ", open at drain " << r.connections_at_drain << ", drained " << r.drained << ", force-closed "
             << r.force_closed << ", in flight at deadline " << r.in_flight_at_deadline;
        if (r.jobs_abandoned) line << ", jobs abandoned " << r.jobs_abandoned;
        if (r.timed_out) line << ", timed out";
        if (r.crashed) line << ", CRASHED: " << r.error;
        if (r.detached) line << ", detached (did not stop)";
        log::info(line.str());
    }
}

// server.max_requests for this process: the limit plus its own random
// jitter, so that processes started together are not replaced together.
std::uint64_t request_limit(const server_config& cfg) {
    if (cfg.max_requests == 0) return 0;
    std::uint64_t jitter = 0;
    if (cfg.max_requests_jitter > 0) {
        std::random_device seed;
        jitter = std::uniform_int_distribution<std::uint64_t>(0, cfg.max_requests_jitter)(seed);
    }
    return cfg.max_requests + jitter;
}

std::uint64_t requests_served(const reactor_set& sched) {
    std::uint64_t n = 0;
    for (unsigned r = 0; r < sched.reactor_count(); ++r) n += sched.stats(r).requests.load(std::memory_order_relaxed);
    return n;
}

std::shared_ptr<const http::client_policy> make_client_policy(const deployment& d) {
    auto policy = std::make_shared<http::client_policy>();
    policy->forwarded_trusted = d.cfg.forwarded_allow_ips;
    for (const auto& l : d.cfg.listen) {
        policy->proxy_protocol.push_back(l.proxy_protocol);
        policy->tls.push_back(l.tls);
        policy->http2.push_back(l.http2.value_or(d.cfg.http2.enabled));
    }
    policy->http2_settings = d.cfg.http2;
    if (d.tls) policy->tls_contexts = std::make_shared<http::tls_context_slot>(d.tls);
    return policy;
}

// SIGHUP in a process without a supervisor: the certificates and keys are
// read again from their paths (a renewal replaces the files, or the
// symlinks to them); new connections get them, open ones keep theirs. A set
// that fails to load is refused and the one loaded before serves on.
void reload_certificates(const deployment& d, http::tls_context_slot& slot) {
    tls::load_report report;
    auto fresh = tls::server_context::load(*d.tls_settings, report);
    for (const auto& w : report.warnings) log::warning("tls: " + w);
    if (!fresh) {
        for (const auto& e : report.errors) log::error("tls: " + e);
        log::error("received SIGHUP: the TLS certificates did not load (above); the ones loaded before serve on");
        return;
    }
    slot.replace(std::move(fresh));
    log::info("received SIGHUP: TLS certificates and keys reloaded; new connections use them (reloading code "
              "and configuration needs a supervisor: server.workers > 1)");
}

}  // namespace

int serve(deployment& d, const process_role& role) {
    // The stop signals, and the others taken with them so that none has its
    // default action (which kills for most): SIGUSR1 reopens the access log,
    // the rest are logged.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP, SIGTTIN, SIGTTOU, give_up_signal()})
        sigaddset(&stop_signals, sig);
    if (role.supervised) sigaddset(&stop_signals, hard_stop_signal);
    auto is_stop = [&](int sig) {
        return sig == SIGTERM || sig == SIGINT || (role.supervised && sig == hard_stop_signal);
    };

    scheduler_options so;
    so.reactors = d.cfg.threads;
    // Each process pins its reactors to its own block of cores.
    so.pin_cores = d.cfg.pin_cores;
    so.first_core = role.index * d.cfg.threads;
    for (const auto& l : d.cfg.listen) so.addresses.push_back(l.endpoint);
    const auto clients = make_client_policy(d);
    so.clients = clients;
    so.limits = d.cfg.http;
    so.services = d.services.get();
    if (role.sockets) role.sockets->hand_to_scheduler(role.index, so);

    serving_context sc;
    sc.process_index = role.index;
    sc.process_count = role.count;
    sc.reactor_count = d.cfg.threads;
    sc.services = d.services.get();
    so.check_addresses = !role.supervised;
    so.load = role.load;

    // Declared before the scheduler: reactors hand it lines until they are gone.
    std::unique_ptr<telemetry::access_log_sink> access_sink;
    // Without a free slot (more processes than the table holds, after
    // SIGTTIN) this process serves uncounted.
    auto* metrics = d.metrics && role.metrics_slot < d.metrics->process_count() ? d.metrics.get() : nullptr;
    if (d.metrics && !metrics) log::warning("metrics: no free slot in the metrics table; this process is not counted");
    if (metrics) metrics->process_started(role.metrics_slot, static_cast<int>(::getpid()));
    if (d.access_format || metrics) {
        so.telemetry = [&d, metrics, &role, &access_sink](unsigned r, boost::asio::io_context& io) {
            auto* slot = metrics ? &metrics->slot(role.metrics_slot, r) : nullptr;
            return std::make_unique<core_reactor_telemetry>(
                slot, std::make_unique<request_recorder>(r, io, d.access_format ? &*d.access_format : nullptr,
                                                         access_sink.get(), metrics, slot));
        };
    }
    auto reopen_logs = [&] {
        if (access_sink)
            access_sink->reopen();
        else
            log::info("received SIGUSR1: no access log file to reopen");
    };

    std::unique_ptr<reactor_set> sched;
    std::unique_ptr<telemetry::metrics_sampler> sampler;
    // Request deadlines: a thread of their own that watches every
    // application call from outside, and raises give_up_signal() when this
    // process cannot serve on.
    std::unique_ptr<deadline::watchdog> deadlines;
    const std::string process_name = (role.supervised ? "worker process " + std::to_string(role.index) + " " : "") +
                                     "(pid " + std::to_string(::getpid()) + ")";
    bool serving_started = false;
    try {
        if (d.access_format) access_sink = std::make_unique<telemetry::access_log_sink>(d.cfg.access_log_file);
        d.composed->prepare_all(executor_pointers(d));
        for (auto& ex : d.executors) ex->start();
        if (const auto shortest = d.composed->shortest_request_timeout(); shortest.count() > 0) {
            deadline::watchdog_options wo;
            wo.max_written_off = d.cfg.max_written_off;
            wo.process_name = process_name;
            for (const auto& spec : d.executor_specs)
                wo.executor_names.push_back("'" + (spec.name.empty() ? spec.type : spec.name) + "' (" + spec.type + ")");
            wo.give_up = [](const std::string& why) {
                log::error("giving this process up: " + why);
                ::kill(::getpid(), give_up_signal());
            };
            deadlines = std::make_unique<deadline::watchdog>(std::move(wo), executor_pointers(d));
            deadlines->start(shortest);
            d.composed->watch_deadlines(deadlines.get());
        }
        d.composed->start_serving(sc);
        serving_started = true;
        sched = d.scheduler->make_reactors(*d.composed, executor_pointers(d), so);
        sched->start();
        if (d.metrics) {
            std::vector<const executor*> executors;
            for (const auto& ex : d.executors) executors.push_back(ex.get());
            sampler = std::make_unique<telemetry::metrics_sampler>(*d.metrics, role.index, std::move(executors),
                                                                   *d.composed);
            sampler->watch_deadlines(deadlines.get());
            sampler->start();
        }
    } catch (const std::exception& e) {
        std::cerr << "m0: cannot start: " << e.what() << "\n";
        sampler.reset();
        if (deadlines) deadlines->stop();
        sched.reset();
        if (serving_started) d.composed->stop_serving(sc);
        stop_executors(d);
        return 1;
    }
    {
        std::ostringstream line;
        line << "m0 " << M0_VERSION_STRING << " serving with " << so.reactors << " reactor thread(s) (scheduler "
             << d.scheduler->name() << "), "
             << describe_frontends(d) << ", " << describe_executors(d) << ", listening on";
        line << describe_listening(d.cfg, sched->local_endpoints());
        if (role.supervised) line << " (worker process " << role.index << " of " << role.count << ")";
        log::info(line.str());
    }

    if (role.supervised) report_ready(role.index);
    std::unique_ptr<pid_file> pid;
    if (!role.supervised) {
        try {
            if (!d.cfg.pid_file.empty()) pid = std::make_unique<pid_file>(d.cfg.pid_file);
        } catch (const std::exception& e) {
            log::error(std::string("cannot start: ") + e.what());
            sched->drain(std::chrono::milliseconds::zero());
            sched.reset();
            d.composed->stop_serving(sc);
            stop_executors(d);
            return 1;
        }
        sd_notify("READY=1\nMAINPID=" + std::to_string(::getpid()));
    }

    // server.max_requests: counted every second; once past it, the process
    // asks its supervisor for a successor and serves on until told to drain.
    const std::uint64_t limit = role.supervised ? request_limit(d.cfg) : 0;
    bool asked = false;
    bool gave_up = false;
    int first = 0;
    while (first == 0) {
        timespec tick{1, 0};
        siginfo_t info{};
        const int sig = limit ? sigtimedwait(&stop_signals, &info, &tick) : sigwaitinfo(&stop_signals, &info);
        if (sig > 0 && is_stop(sig)) {
            first = sig;
        } else if (sig == give_up_signal()) {
            gave_up = true;
            if (role.supervised) {
                log::error("asking the supervisor to replace this process at once");
                ask_for_replacement(true);
            } else {
                // Alone, nothing can serve beside it: exit non-zero so that
                // the service manager (systemd, Kubernetes) starts m0 anew.
                log::error("stopping with exit code 3 so that the service manager restarts m0");
                first = SIGTERM;
            }
        } else if (sig == SIGHUP && !role.supervised && clients->tls_contexts) {
            reload_certificates(d, *clients->tls_contexts);
        } else if (sig > 0) {
            on_other_signal(sig, role.supervised, reopen_logs);
        } else if (limit && !asked && requests_served(*sched) >= limit) {
            asked = true;
            log::info("served " + std::to_string(requests_served(*sched)) + " requests (server.max_requests " +
                      std::to_string(d.cfg.max_requests) + ", this process's limit with its jitter " +
                      std::to_string(limit) + "): asking the supervisor for a replacement");
            ask_for_replacement();
        }
    }
    if (!role.supervised) sd_notify("STOPPING=1");
    // Ends the /status streams once every serving process drains.
    if (d.metrics) d.metrics->process_draining(role.index);
    std::chrono::milliseconds timeout = d.cfg.drain_timeout;
    if (gave_up) timeout = std::min(std::chrono::milliseconds(3000), d.cfg.drain_timeout);
    if (first == SIGINT) timeout = std::min(interactive_drain_timeout, d.cfg.drain_timeout);
    if (first == hard_stop_signal && role.supervised) timeout = std::chrono::milliseconds::zero();
    if (gave_up) {
        log::info("draining (timeout " + std::to_string(timeout.count()) + " ms) before exiting with code 3");
    } else if (timeout.count() > 0) {
        log::info("received " + signal_name(first) + ", draining (timeout " + std::to_string(timeout.count()) +
                  " ms); send it again to stop at once");
    } else {
        log::info("received " + signal_name(first) + ", stopping now");
    }

    // The watchdog goes first, while the reactors still run: the calls it
    // watches hold exchanges, which it hands back to their reactors (a
    // reactor's io_context must outlive every exchange of its). During the
    // drain, server.drain_timeout bounds what is still running.
    if (deadlines) deadlines->stop();
    // Drain on a helper thread so this thread keeps listening: a second
    // signal turns the drain into a hard stop.
    std::atomic<bool> drained{false};
    std::vector<reactor_report> reports;
    std::thread drainer([&] {
        reports = sched->drain(timeout);
        drained.store(true, std::memory_order_release);
    });
    bool hard = timeout.count() <= 0;
    while (!drained.load(std::memory_order_acquire)) {
        timespec tick{0, 50'000'000};
        int sig = sigtimedwait(&stop_signals, nullptr, &tick);
        if (sig > 0 && !is_stop(sig)) {
            on_other_signal(sig, role.supervised, reopen_logs);
            continue;
        }
        // A supervised process may get a drain signal twice (from a
        // terminal's process group and from its supervisor): only the
        // supervisor's hard-stop signal means "now".
        if (sig <= 0 || hard || (role.supervised && sig != hard_stop_signal)) continue;
        hard = true;
        log::warning("second signal: stopping now");
        // drain() is waiting for the workers; raise its phase to a hard stop.
        sched->shutdown();
    }
    drainer.join();
    if (sampler) sampler->stop();  // a last sample, while executors and plugins still run
    print_reports(reports);
    unsigned crashed = sched->crashed_reactor_count();
    sched.reset();
    access_sink.reset();  // writes the last lines
    if (metrics) metrics->process_ended(role.metrics_slot);
    d.composed->stop_serving(sc);
    unsigned stuck = stop_executors(d);
    for (const auto& r : reports) stuck += r.detached ? 1 : 0;
    if (crashed) log::warning(std::to_string(crashed) + " reactor thread(s) crashed while serving");
    if (stuck > 0) {
        // Application code that does not return (a view sleeping, a
        // generator waiting on nothing) must not keep the process alive
        // after its drain: its thread would also hold up interpreter and
        // plugin teardown, so exit without running any of it.
        log::warning("stopped, leaving " + std::to_string(stuck) + " thread(s) inside application code");
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        ::_exit(gave_up ? 3 : 0);
    }
    log::info("stopped");
    return gave_up ? 3 : 0;
}

}  // namespace m0
