// The `inline` executor: runs every job on the reactor thread at submit time.
// No hand-off at all, which makes it the baseline the pool is measured
// against, and the right choice for native handlers that never block.
#include <m0/executor.hpp>

#include <memory>
#include <vector>

namespace m0 {
namespace {

// Thread hooks run once per reactor thread that runs a job (a Python thread
// state for the reactor thread, say), and on_stop when the lane goes away on
// that same thread.
struct hook_list {
    std::vector<thread_hooks> hooks;
};

class inline_lane final : public executor_lane, private completion_port {
public:
    explicit inline_lane(std::shared_ptr<const hook_list> hooks) : hooks_(std::move(hooks)) {}

    ~inline_lane() override {
        if (hooks_started_) {
            for (auto it = hooks_->hooks.rbegin(); it != hooks_->hooks.rend(); ++it)
                if (it->on_stop) it->on_stop();
        }
    }

    void submit(std::unique_ptr<job> j) override {
        if (!hooks_started_) {
            hooks_started_ = true;
            for (auto& h : hooks_->hooks)
                if (h.on_start) h.on_start();
        }
        ++in_flight_;
        j->run(*this);
        j->complete(false);
        --in_flight_;
    }

    std::size_t poll_completions() override { return 0; }
    bool prepare_to_wait() override { return true; }
    void finished_waiting() override {}
    std::size_t jobs_in_flight() const override { return in_flight_; }

private:
    // The job runs on this very reactor thread, so a task it posts can run at
    // once: in order, before complete(), and a streamed chunk reaches the
    // socket while the job is still producing the next one.
    void post(std::unique_ptr<reactor_task> task) override { task->run_on_reactor(); }

    std::shared_ptr<const hook_list> hooks_;
    std::size_t in_flight_ = 0;
    bool hooks_started_ = false;
};

class inline_executor final : public executor {
public:
    std::string_view name() const override { return "inline"; }
    void add_thread_hooks(thread_hooks hooks) override { hooks_->hooks.push_back(std::move(hooks)); }
    void start() override {}
    std::unique_ptr<executor_lane> make_lane(reactor_waker&) override {
        return std::make_unique<inline_lane>(hooks_);
    }
    void stop() override {}

private:
    std::shared_ptr<hook_list> hooks_ = std::make_shared<hook_list>();
};

}  // namespace

std::unique_ptr<executor> make_inline_executor() { return std::make_unique<inline_executor>(); }

}  // namespace m0
