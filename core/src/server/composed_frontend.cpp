#include "server/composed_frontend.hpp"

#include <stdexcept>

#include <m0/http.hpp>
#include <m0/log.hpp>

namespace m0 {

composed_frontend::composed_frontend(std::vector<mount_part> mounts, std::vector<module*> modules,
                                     unsigned reactor_count)
    : mounts_(std::move(mounts)), modules_(std::move(modules)) {
    if (mounts_.empty()) throw std::invalid_argument("a deployment needs at least one frontend");
    for (auto* m : modules_) parts_.push_back(m);
    for (auto& m : mounts_) parts_.push_back(m.fe);
    workers_.resize(reactor_count);
}

void composed_frontend::prepare_all(const std::vector<executor*>& executors) {
    for (auto* m : modules_)
        for (auto* ex : executors) m->prepare(*ex);
    for (auto& m : mounts_) m.fe->prepare(*executors.at(m.executor));
}

void composed_frontend::start_serving(serving_context& ctx) {
    started_ = 0;
    try {
        for (auto* p : parts_) {
            p->start_serving(ctx);
            ++started_;
        }
    } catch (...) {
        stop_serving(ctx);
        throw;
    }
}

std::chrono::nanoseconds composed_frontend::shortest_request_timeout() const noexcept {
    std::chrono::nanoseconds shortest{0};
    for (const auto& m : mounts_)
        if (m.request_timeout.count() > 0 && (shortest.count() == 0 || m.request_timeout < shortest))
            shortest = m.request_timeout;
    return shortest;
}

deadline_watch* composed_frontend::deadlines_for(std::size_t i, reactor_context& ctx, worker_mounts& into) {
    const auto& m = mounts_[i];
    if (!watchdog_ || m.request_timeout.count() <= 0) return nullptr;
    if (into.deadlines.size() < mounts_.size()) into.deadlines.resize(mounts_.size());
    into.deadlines[i] =
        std::make_unique<deadline::mount_deadlines>(watchdog_, m.executor, m.prefix, m.request_timeout, ctx.reactor);
    return into.deadlines[i].get();
}

void composed_frontend::start_reactor(reactor_context& ctx) {
    if (ctx.index >= workers_.size()) throw std::logic_error("worker index beyond the configured worker count");
    if (!routed()) {
        auto& w = *(workers_[ctx.index] = std::make_unique<worker_mounts>());
        ctx.lane = ctx.executor_lanes.at(mounts_.front().executor);
        ctx.deadlines = deadlines_for(0, ctx, w);
        for (auto* m : modules_) m->start_reactor(ctx);
        mounts_.front().fe->start_reactor(ctx);
        return;
    }
    for (auto* m : modules_) m->start_reactor(ctx);
    std::vector<std::string> prefixes;
    for (const auto& m : mounts_) prefixes.push_back(m.prefix);
    auto& w = *(workers_[ctx.index] = std::make_unique<worker_mounts>());
    w.router = std::make_unique<http::mount_router>(std::move(prefixes));
    w.contexts.reserve(mounts_.size());
    for (std::size_t i = 0; i < mounts_.size(); ++i) {
        const auto& m = mounts_[i];
        reactor_context& mc = w.contexts.emplace_back(ctx);
        mc.clear_hooks();  // the copy holds the modules' hooks: they stay on ctx only
        mc.lane = ctx.executor_lanes.at(m.executor);
        mc.mount = &w.router->binding(i);
        mc.deadlines = deadlines_for(i, ctx, w);
        try {
            m.fe->start_reactor(mc);
        } catch (...) {
            mc.move_hooks_to(ctx);  // what it started is closed with the worker
            throw;
        }
        mc.move_hooks_to(ctx);
        if (!w.router->bound(i))
            throw std::runtime_error("frontend '" + m.type + "' mounted at '" + (m.prefix.empty() ? "/" : m.prefix) +
                                     "' serves no HTTP handler through the core engine, so it cannot be mounted");
    }
    http::serve(ctx, *w.router);
}

void composed_frontend::stop_reactor(reactor_context& ctx) {
    if (!routed()) {
        mounts_.front().fe->stop_reactor(ctx);
    } else if (ctx.index < workers_.size() && workers_[ctx.index]) {
        auto& contexts = workers_[ctx.index]->contexts;
        for (std::size_t i = contexts.size(); i-- > 0;) mounts_[i].fe->stop_reactor(contexts[i]);
    }
    for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) (*it)->stop_reactor(ctx);
}

void composed_frontend::report_metrics(metrics_writer& out) const {
    for (const auto* p : parts_) p->report_metrics(out);
}

void composed_frontend::stop_serving(serving_context& ctx) {
    for (std::size_t i = started_; i-- > 0;) {
        try {
            parts_[i]->stop_serving(ctx);
        } catch (const std::exception& e) {
            log::error(std::string("stop_serving failed: ") + e.what());
        }
    }
    started_ = 0;
}

void composed_frontend::before_fork() {
    for (auto* p : parts_) p->before_fork();
}

void composed_frontend::after_fork_parent() {
    for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) (*it)->after_fork_parent();
}

void composed_frontend::after_fork_child() {
    for (auto* p : parts_) p->after_fork_child();
}

bool composed_frontend::needs_per_reactor_listeners() const {
    for (const auto& m : mounts_)
        if (m.fe->needs_per_reactor_listeners()) return true;
    return false;
}

}  // namespace m0
