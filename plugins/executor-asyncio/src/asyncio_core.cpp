#include "asyncio_core.hpp"

#include <pthread.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>

namespace m0::asyncio {

namespace {

// The Python half of a loop thread. run_forever releases the GIL while the
// loop waits in epoll; stop cancels what is left, bounded by the grace.
constexpr const char* glue_source = R"PY(
import asyncio

def make_loop(kind):
    if kind == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()

def run(loop, fd, drain):
    asyncio.set_event_loop(loop)
    loop.add_reader(fd, drain)
    loop.run_forever()

def finish(loop, fd, timeout):
    tasks = []
    try:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=timeout))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.remove_reader(fd)
        asyncio.set_event_loop(None)
        loop.close()
    return len(tasks)
)PY";

// The port a job that finishes when run() returns posts through.
struct lane_port final : completion_port {
    explicit lane_port(lane_state& l) : lane(l) {}
    void post(std::unique_ptr<reactor_task> task) override {
        asyncio_core::push_completion(lane, {task.release(), entry::task_entry});
    }
    void finish() noexcept override {}
    lane_state& lane;
};

// The port of a job that finishes later (a coroutine's Task): finish() from
// its done callback queues the job behind its posts. The lane outlives it:
// the core keeps every lane until it is freed.
struct deferred_port final : completion_port {
    deferred_port(lane_state& l, job* j) : lane(l), owner(j) {}
    void post(std::unique_ptr<reactor_task> task) override {
        asyncio_core::push_completion(lane, {task.release(), entry::task_entry});
    }
    void finish() noexcept override {
        asyncio_core::push_completion(lane, {owner, entry::job_entry});
        delete this;
    }
    lane_state& lane;
    job* owner;
};

PyObject* drain_callback(PyObject* capsule, PyObject*) {
    auto* loop = static_cast<loop_state*>(PyCapsule_GetPointer(capsule, "m0.asyncio.loop"));
    if (!loop) return nullptr;
    loop->owner->drain(*loop);
    Py_RETURN_NONE;
}

// The loop thread is the only writer of its loop's wait counters: a load
// and a store, no locked instruction.
void count_wait(loop_state& loop, std::int64_t queued_ns) noexcept {
    const auto waited = static_cast<std::uint64_t>(std::max<std::int64_t>(0, now_ns() - queued_ns));
    auto& bucket = loop.wait[queue_wait_histogram::bucket_of(waited)];
    bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    loop.wait_sum_ns.store(loop.wait_sum_ns.load(std::memory_order_relaxed) + waited, std::memory_order_relaxed);
}

PyMethodDef drain_def = {"m0_drain", drain_callback, METH_NOARGS, "runs the jobs m0's reactors queued"};

}  // namespace

asyncio_core::asyncio_core(asyncio_options options) : options_(options) {
    if (options_.loops < 1 || options_.loops > max_lanes)
        throw std::invalid_argument("asyncio: need 1 <= loops <= 256");
    for (unsigned i = 0; i < options_.loops; ++i) {
        auto l = std::make_unique<loop_state>();
        l->owner = this;
        l->index = i;
        loops_.push_back(std::move(l));
    }
    python::gil_scope gil;
    python::py_ref globals(PyDict_New());
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    python::py_ref result(PyRun_String(glue_source, Py_file_input, globals.get(), globals.get()));
    if (!result) {
        python::log_exception("asyncio: cannot set up the loop helpers");
        throw std::runtime_error("asyncio: cannot set up the loop helpers");
    }
    glue_ = globals;
}

asyncio_core::~asyncio_core() {
    stop(std::chrono::milliseconds::max());
    python::gil_scope gil;
    glue_ = python::py_ref();
}

PyObject* asyncio_core::loop_object(unsigned index) const noexcept {
    if (index >= loops_.size()) return nullptr;
    return loops_[index]->loop_seen.load();
}

void asyncio_core::add_thread_hooks(thread_hooks hooks) {
    std::lock_guard lock(mutex_);
    if (started_) throw std::logic_error("asyncio: thread hooks must be added before start()");
    hooks_.push_back(std::move(hooks));
}

std::shared_ptr<lane_state> asyncio_core::add_lane(std::shared_ptr<reactor_waker> waker) {
    std::lock_guard lock(mutex_);
    loop_state& loop = *loops_[next_lane_ % loops_.size()];
    const std::size_t slot = loop.lane_count.load();
    if (slot >= max_lanes) throw std::length_error("asyncio: more than 256 lanes on one loop");
    auto lane = std::make_shared<lane_state>(loop, std::move(waker), options_.ring_capacity);
    ++next_lane_;
    lane_owners_.push_back(lane);
    loop.lanes[slot].store(lane.get(), std::memory_order_release);
    loop.lane_count.store(slot + 1, std::memory_order_release);
    return lane;
}

void asyncio_core::start() {
    std::unique_lock lock(mutex_);
    if (started_) return;
    started_ = true;
    // The thread keeps the core alive: one left running after stop's grace
    // touches nothing freed.
    auto self = shared_from_this();
    for (auto& l : loops_) l->thread = std::thread([self, loop = l.get()] { self->loop_main(*loop); });
    changed_.wait(lock, [&] {
        for (auto& l : loops_)
            if (!l->ready) return false;
        return true;
    });
    for (auto& l : loops_) {
        if (!l->start_error.empty()) {
            const std::string why = l->start_error;
            lock.unlock();
            stop(std::chrono::seconds(5));
            throw std::runtime_error(why);
        }
    }
}

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// How long stats() reports a lag after it was measured.
constexpr std::int64_t lag_memory_ns = 10'000'000'000;

executor_stats asyncio_core::stats() const {
    executor_stats st;
    st.threads = loops_.size();
    std::uint64_t depth = 0, done = 0;
    std::int64_t lag = 0;
    queue_wait_histogram wait;
    const std::int64_t now = now_ns();
    for (const auto& l : loops_) {
        const std::size_t lanes = l->lane_count.load(std::memory_order_acquire);
        for (std::size_t i = 0; i < lanes; ++i) {
            const lane_state* lane = l->lanes[i].load(std::memory_order_acquire);
            if (!lane) continue;
            const auto started = lane->started.load(std::memory_order_relaxed);
            const auto submitted = lane->submitted.load(std::memory_order_relaxed);
            depth += submitted > started ? submitted - started : 0;
            done += lane->completed.load(std::memory_order_relaxed);
        }
        for (std::size_t b = 0; b < wait.buckets.size(); ++b)
            wait.buckets[b] += l->wait[b].load(std::memory_order_relaxed);
        wait.sum_ns += l->wait_sum_ns.load(std::memory_order_relaxed);
        // The last lag measured, if recent: a loop without work for a while
        // has none. A wake the loop has not got to yet counts as it stands:
        // a loop blocked by a coroutine shows its lag while it is blocked.
        if (now - l->lag_at_ns.load(std::memory_order_relaxed) <= lag_memory_ns)
            lag = std::max(lag, l->lag_last_ns.load(std::memory_order_relaxed));
        if (const auto woken = l->wake_at_ns.load(std::memory_order_relaxed); woken != 0)
            lag = std::max(lag, now - woken);
    }
    st.queue_depth = depth;
    st.jobs_done = done;
    st.queue_wait = wait;
    st.loop_lag = std::chrono::nanoseconds(lag);
    return st;
}

void asyncio_core::wake_loop(loop_state& loop) noexcept {
    if (loop.wake_pending.exchange(true)) return;  // push → read the flag: a wake is in flight
    loop.wake_at_ns.store(now_ns(), std::memory_order_relaxed);
    loop.wakes.fetch_add(1, std::memory_order_relaxed);
    loop.wake.signal();
}

namespace {

// A drain pass wakes each reactor once per batch of the jobs it runs, not
// once per completion. A wake of a sleeping reactor is an eventfd write and
// a cross-CPU wake-up; on a FastAPI route the reactor, done with one answer
// long before the next, slept ~1.4 times per request, ~0.3 with batches,
// and spent a third less CPU (docs/benchmarks/asgi_bare.md, "One wake per batch").
// A batch ends after batch_jobs entries, or at the first entry boundary
// batch_time after its first owed wake, or with the pass: a completion
// waits at most that long plus the job then running.
constexpr std::size_t batch_jobs = 16;
constexpr std::int64_t batch_time_ns = 200'000;

// The owed list of the drain pass running on this thread (null elsewhere,
// and around a blocking job, whose posts stream while it runs).
thread_local std::vector<lane_state*>* owed_wakes = nullptr;

// Reads each owed lane's announcement, as push_completion would have done
// right after its push: a reactor that announced its sleep since is woken,
// one that has not will see the completions on its re-check.
void pay_owed_wakes(std::vector<lane_state*>& owed) noexcept {
    for (lane_state* lane : owed) {
        lane->wake_owed = false;
        if (lane->reactor_waiting.exchange(false)) lane->waker->wake();
    }
    owed.clear();
}

// One drain pass's batches: this thread's pushes owe their wakes while it
// lives (but for pause()..resume()); entry_done() pays them when a batch is
// full or old, the destructor what is left at the end of the pass.
class wake_batch {
public:
    explicit wake_batch(std::vector<lane_state*>& owed) noexcept : owed_(owed) { owed_wakes = &owed_; }
    ~wake_batch() {
        owed_wakes = nullptr;
        pay_owed_wakes(owed_);
    }
    wake_batch(const wake_batch&) = delete;
    wake_batch& operator=(const wake_batch&) = delete;

    // After each entry of the pass: ends the batch when it is full or old.
    void entry_done() noexcept {
        if (owed_.empty()) {
            jobs_ = 0;
            return;
        }
        if (jobs_++ == 0) first_owed_ns_ = now_ns();
        if (jobs_ >= batch_jobs || now_ns() - first_owed_ns_ >= batch_time_ns) {
            pay_owed_wakes(owed_);
            jobs_ = 0;
        }
    }

    // Around a blocking job: its posts wake the reactor at once.
    void pause() noexcept {
        pay_owed_wakes(owed_);
        jobs_ = 0;
        owed_wakes = nullptr;
    }
    void resume() noexcept { owed_wakes = &owed_; }

private:
    std::vector<lane_state*>& owed_;
    std::size_t jobs_ = 0;
    std::int64_t first_owed_ns_ = 0;
};

}  // namespace

void asyncio_core::push_completion(lane_state& lane, entry e) {
    lane.completions.push(e);
    if (owed_wakes) {
        // Only the loop thread that owns the lane drains it, so this is
        // that thread: wake_owed is its own.
        if (!lane.wake_owed) {
            lane.wake_owed = true;
            owed_wakes->push_back(&lane);
        }
        return;
    }
    if (lane.reactor_waiting.exchange(false)) lane.waker->wake();  // push → read the announcement
}

void asyncio_core::drain(loop_state& loop) noexcept {
    loop.wake.wait(std::chrono::nanoseconds(0));  // consume the eventfd
    loop.wake_pending.exchange(false);            // clear, then look: see wake_loop
    if (const auto woken = loop.wake_at_ns.exchange(0, std::memory_order_relaxed); woken != 0) {
        const auto now = now_ns();
        const auto lag = std::max<std::int64_t>(0, now - woken);
        loop.lag_last_ns.store(lag, std::memory_order_relaxed);
        loop.lag_at_ns.store(now, std::memory_order_relaxed);
        if (lag > loop.lag_max_ns.load(std::memory_order_relaxed))
            loop.lag_max_ns.store(lag, std::memory_order_relaxed);  // the loop thread is its only writer
    }
    if (stopping()) {
        // What is still queued is cancelled by the reactors once this loop
        // has exited; the loop stops after this callback.
        python::py_ref r(PyObject_CallMethod(loop.loop.get(), "stop", nullptr));
        if (!r) python::log_exception("asyncio: loop.stop() failed");
        return;
    }
    const std::size_t lanes = loop.lane_count.load(std::memory_order_acquire);
    wake_batch batch(loop.owed_wakes);
    for (std::size_t i = 0; i < lanes; ++i) {
        lane_state* lane = loop.lanes[i].load(std::memory_order_acquire);
        if (!lane) continue;
        lane->inbound.drain([&](const entry& e) {
            if (e.kind == entry::task_entry) {
                auto* task = static_cast<job_task*>(e.ptr);
                task->run_in_job();
                delete task;
                batch.entry_done();
                return;
            }
            auto* j = static_cast<job*>(e.ptr);
            lane->started.fetch_add(1, std::memory_order_relaxed);
            count_wait(loop, e.queued_ns);
            if (j->finishes_later()) {
                j->run(*new deferred_port(*lane, j));
                batch.entry_done();
                return;
            }
            // A plain job is a blocking call (a WSGI app run on the loop as
            // an experiment): it takes the GIL itself, as on the pool.
            lane_port port(*lane);
            batch.pause();
            {
                python::gil_release nogil;
                j->run(port);
            }
            push_completion(*lane, {j, entry::job_entry});
            batch.resume();
        });
    }
    // A job's run() is noexcept; an exception it left set would surface in
    // the loop as this callback's error and be misattributed.
    if (PyErr_Occurred()) python::log_exception("asyncio: a job left a Python exception set");
}

void asyncio_core::run_loop(loop_state& loop) {
    python::gil_scope gil;
    const char* kind = options_.loop == loop_kind::uvloop ? "uvloop" : "asyncio";
    PyObject* make = PyDict_GetItemString(glue_.get(), "make_loop");
    python::py_ref loop_obj(PyObject_CallFunction(make, "s", kind));
    if (!loop_obj) {
        const std::string tb = python::take_exception_text();
        std::lock_guard lock(mutex_);
        loop.start_error = "asyncio: cannot create a " + std::string(kind) + " event loop: " + python::last_line(tb);
        loop.ready = true;
        changed_.notify_all();
        return;
    }
    loop.loop = loop_obj;
    loop.owed_wakes.reserve(max_lanes);  // no allocation in a drain pass
    python::py_ref capsule(PyCapsule_New(&loop, "m0.asyncio.loop", nullptr));
    python::py_ref drain_fn(PyCFunction_New(&drain_def, capsule.get()));
    const int fd = loop.wake.native_handle();
    {
        std::lock_guard lock(mutex_);
        loop.loop_seen.store(loop_obj.get());
        loop.ready = true;
    }
    changed_.notify_all();
    python::py_ref ran(PyObject_CallFunction(PyDict_GetItemString(glue_.get(), "run"), "OiO", loop_obj.get(),
                                             fd, drain_fn.get()));
    if (!ran) python::log_exception("asyncio: loop " + std::to_string(loop.index) + " failed");
    loop.loop_seen.store(nullptr);
    python::py_ref done(PyObject_CallFunction(PyDict_GetItemString(glue_.get(), "finish"), "Oid", loop_obj.get(),
                                              fd, cancel_timeout_s_.load()));
    if (!done) {
        python::log_exception("asyncio: loop " + std::to_string(loop.index) + " did not close cleanly");
    } else {
        // Tasks still running after the drain: coroutines that outlived
        // their requests (or a drain cut short). Logged every time, so that
        // "0" can be checked.
        log::info("asyncio: loop " + std::to_string(loop.index) + " closed; " +
                  std::to_string(PyLong_AsLong(done.get())) + " task(s) still running were cancelled");
    }
    loop.loop = python::py_ref();
}

void asyncio_core::loop_main(loop_state& loop) {
    const std::string name = "m0-asyncio-" + std::to_string(loop.index);
    pthread_setname_np(pthread_self(), name.c_str());
    python::attach_thread();
    for (auto& h : hooks_)
        if (h.on_start) h.on_start();
    python::attach_thread();  // a hook may have detached it; the loop needs one
    run_loop(loop);
    for (auto it = hooks_.rbegin(); it != hooks_.rend(); ++it)
        if (it->on_stop) it->on_stop();
    python::detach_thread();
    {
        std::lock_guard lock(mutex_);
        loop.exited.store(true);
    }
    changed_.notify_all();
    // Reactors cancel what is left on their rings once the loop is gone.
    const std::size_t lanes = loop.lane_count.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < lanes; ++i) {
        lane_state* lane = loop.lanes[i].load(std::memory_order_acquire);
        if (lane && !lane->closed.load()) lane->waker->wake();
    }
}

unsigned asyncio_core::stop(std::chrono::milliseconds grace) {
    std::unique_lock lock(mutex_);
    if (stopped_) return abandoned_;
    stopped_ = true;
    if (!started_) return 0;
    const bool forever = grace == std::chrono::milliseconds::max();
    // Cancelled tasks get part of the grace to unwind; the rest is for the
    // loop to close.
    cancel_timeout_s_.store(forever ? 5.0 : std::chrono::duration<double>(grace).count() / 2);
    stopping_.store(true);
    for (auto& l : loops_) {
        l->wake_pending.store(true);
        l->wake.signal();
    }
    const auto deadline = forever ? std::chrono::steady_clock::time_point::max()
                                  : std::chrono::steady_clock::now() + grace;
    for (auto& l : loops_) {
        const auto done = [&] { return l->exited.load(); };
        const bool exited = forever ? (changed_.wait(lock, done), true) : changed_.wait_until(lock, deadline, done);
        if (exited) {
            lock.unlock();
            l->thread.join();
            lock.lock();
        } else {
            l->thread.detach();
            ++abandoned_;
        }
    }
    if (abandoned_ > 0)
        log::warning("asyncio: " + std::to_string(abandoned_) +
                     " loop thread(s) still busy at shutdown (a coroutine blocking its loop?); left running");
    return abandoned_;
}

}  // namespace m0::asyncio
