#include "pool_core.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <m0/log.hpp>

namespace m0::pool {

namespace {

// Every announce/re-check pair is a Dekker handshake, made of seq_cst
// read-modify-writes on the announcement word rather than fences: an RMW
// reads the latest value in that word's modification order, so either the
// pusher's RMW reads the announcement, or the announcer's RMW reads from the
// pusher's and synchronises with it, and its re-check then sees the push.
// (ThreadSanitizer models RMWs; it does not model fences.)

// A thread's own counters: it is their only writer, so a load and a store
// do (no locked instruction on the job path).
void bump(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// SCHED_BATCH keeps the fair share and the tick preemption; it only stops a
// woken thread from preempting the thread running on its core.
// executor.pool.batch_sched: a pool thread parks under SCHED_BATCH and runs
// its jobs under the default policy. The kernel lets a woken SCHED_BATCH
// thread preempt nobody, so a reactor that wakes a parked pool thread on its
// own core goes on reading requests and submitting jobs until it runs out of
// work, and the pool thread then takes a batch instead of one job per wake
// (two context switches per request otherwise). A job, though, may itself
// wait (a database query, a file, a lock): the wake that ends such a wait
// must preempt like any other, or on a busy core the job waits for the next
// scheduler tick (4 ms at HZ=250) after each query — measured in
// docs/benchmarks/django_pg.md, "server.threads, batch_sched and the pool's
// threads" (issue 23): a Django page of three queries served at
// 0.6x with the policy kept through the job. So the policy changes at the
// park and back after it, two syscalls per park (none between jobs taken
// back to back). Needs no privilege.
void set_scheduling(int policy, bool& current_batch) noexcept {
    const bool batch = policy == SCHED_BATCH;
    if (current_batch == batch) return;
    sched_param param{};
    if (const int err = pthread_setschedparam(pthread_self(), policy, &param); err != 0) {
        log::debug("pool: a thread stays on its scheduling policy (" + std::to_string(policy) + " refused, error " +
                   std::to_string(err) + ")");
        return;
    }
    current_batch = batch;
}

}  // namespace

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void pool_core::count_taken(job_counters& c, std::int64_t queued_ns) noexcept {
    const auto waited = static_cast<std::uint64_t>(std::max<std::int64_t>(0, now_ns() - queued_ns));
    bump(c.taken, 1);
    bump(c.wait[queue_wait_histogram::bucket_of(waited)], 1);
    bump(c.wait_sum_ns, waited);
}

void pool_core::count_done(job_counters& c) noexcept { bump(c.done, 1); }

executor_stats pool_core::stats() const {
    executor_stats st;
    const unsigned live = live_.load(), idle = idle_.load(), parked = parked_.load();
    st.threads = live;
    st.threads_busy = live > idle ? live - idle : 0;
    st.threads_parked = std::min(parked, live);
    st.threads_written_off = written_off_.load();
    if (options_.growth == growth_kind::blocked) st.threads_blocked = std::min(blocked_threads(), live);
    st.threads_max = options_.max_threads;
    st.queue_depth = queued_jobs();
    queue_wait_histogram wait;
    std::uint64_t done = 0;
    for (const auto& s : slots_) {
        done += s->counted.done.load(std::memory_order_relaxed);
        for (std::size_t b = 0; b < wait.buckets.size(); ++b)
            wait.buckets[b] += s->counted.wait[b].load(std::memory_order_relaxed);
        wait.sum_ns += s->counted.wait_sum_ns.load(std::memory_order_relaxed);
    }
    st.jobs_done = done;
    st.queue_wait = wait;
    return st;
}

std::uint64_t pool_core::queued_jobs() const noexcept {
    std::uint64_t depth = 0;
    const std::size_t lanes = lane_count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < lanes; ++i) {
        const lane_state* l = lanes_[i].load(std::memory_order_acquire);
        if (!l) continue;
        // taken is read first: a job taken after that read was pushed before
        // the read of pushed_seen, so the difference never goes below zero
        // for long (clamped for the instant in between).
        const auto taken = l->taken.load(std::memory_order_relaxed);
        const auto pushed = l->pushed_seen.load(std::memory_order_relaxed);
        depth += (pushed > taken ? pushed - taken : 0) + l->overflow_seen.load(std::memory_order_relaxed);
    }
    return depth;
}

const char* to_string(growth_kind kind) noexcept {
    return kind == growth_kind::blocked ? "blocked" : "eager";
}

const char* to_string(ring_kind kind) noexcept {
    switch (kind) {
    case ring_kind::vyukov: return "vyukov";
    case ring_kind::lockfree: return "lockfree";
    case ring_kind::none: return "none";
    }
    return "?";
}

lane_state::lane_state(pool_core& c, std::shared_ptr<reactor_waker> w)
    : core(c),
      waker(std::move(w)),
      jobs(make_entry_ring<queued_job>(c.options().ring, c.options().ring_capacity)),
      completions(make_entry_ring<completion_entry>(c.options().ring, c.options().ring_capacity)) {}

// The port a running job posts partial results through. On the stack for a
// job that finishes when run() returns.
struct lane_port final : completion_port {
    explicit lane_port(lane_state& l) : lane(l) {}
    void post(std::unique_ptr<reactor_task> task) override {
        lane.core.push_completion(lane, {task.release(), completion_entry::task});
    }
    // A blocking job's end is the return from run(); see run_job.
    void finish() noexcept override {}
    lane_state& lane;
};

// The port of a job that finishes later: lives until the job calls finish()
// (from any thread), which queues the job's completion behind its posts.
// The lane_state outlives it: the pool keeps every lane until it is freed.
struct deferred_port final : completion_port {
    deferred_port(lane_state& l, job* j) : lane(l), owner(j) {}
    void post(std::unique_ptr<reactor_task> task) override {
        lane.core.push_completion(lane, {task.release(), completion_entry::task});
    }
    void finish() noexcept override {
        lane.core.push_completion(lane, {owner, completion_entry::done});
        delete this;
    }
    lane_state& lane;
    job* owner;
};

pool_core::pool_core(pool_options options) : options_(options) {
    if (options_.threads < 1 || options_.max_threads < options_.threads ||
        options_.max_threads > max_pool_threads)
        throw std::invalid_argument("pool: need 1 <= threads <= max_threads <= 256");
    slots_.reserve(options_.max_threads + written_off_slots);
    for (unsigned i = 0; i < options_.max_threads + written_off_slots; ++i) slots_.push_back(std::make_unique<slot>());
    have_start_cpus_ = pthread_getaffinity_np(pthread_self(), sizeof start_cpus_, &start_cpus_) == 0;
}

pool_core::~pool_core() { stop(std::chrono::milliseconds::max()); }

void pool_core::add_thread_hooks(thread_hooks hooks) {
    std::lock_guard lock(threads_mutex_);
    if (started_) throw std::logic_error("pool: thread hooks must be added before start()");
    hooks_.push_back(std::move(hooks));
}

void pool_core::start() {
    std::lock_guard lock(threads_mutex_);
    if (started_) return;
    started_ = true;
    for (unsigned i = 0; i < options_.threads; ++i) spawn_locked();
    if (options_.growth == growth_kind::blocked) start_governor();
}

std::shared_ptr<lane_state> pool_core::add_lane(std::shared_ptr<reactor_waker> waker) {
    auto lane = std::make_shared<lane_state>(*this, std::move(waker));
    std::lock_guard lock(threads_mutex_);
    const std::size_t index = lane_count_.load();
    if (index >= max_lanes) throw std::length_error("pool: more than 256 lanes");
    lane_owners_.push_back(lane);
    lanes_[index].store(lane.get(), std::memory_order_release);
    lane_count_.store(index + 1, std::memory_order_release);
    return lane;
}

unsigned pool_core::stop(std::chrono::milliseconds grace) {
    std::vector<slot*> to_join;
    {
        std::lock_guard lock(threads_mutex_);
        if (stopped_) return abandoned_threads_;
        stopped_ = true;
        stopping_.store(true, std::memory_order_seq_cst);
        for (auto& s : slots_)
            if (s->thread.joinable()) to_join.push_back(s.get());
    }
    stop_governor();  // before the threads: it reads their probes and spawns
    // After stopping_ is set, a thread either sees it before parking or is
    // parked and seen here; the `none` pool's threads each take one token.
    parked_.fetch_add(0);  // stopping_ → read who is parked
    wake_all();
    if (!ring_mode())
        for (std::size_t i = 0; i < to_join.size(); ++i) job_semaphore_.signal();
    // A thread inside a job runs application code that may never return (a
    // view sleeping for a minute): wait for it only until the grace ends,
    // then leave it running. Its slot and this core stay allocated (the
    // owner keeps the core alive when threads were left), so it touches
    // nothing freed if it ever comes back.
    const auto deadline = grace == std::chrono::milliseconds::max()
                              ? std::chrono::steady_clock::time_point::max()
                              : std::chrono::steady_clock::now() + grace;
    for (slot* s : to_join) {
        std::unique_lock lock(exit_mutex_);
        const auto done = [s] { return s->exited.load(std::memory_order_acquire); };
        const bool exited = deadline == std::chrono::steady_clock::time_point::max()
                                ? (exited_.wait(lock, done), true)
                                : exited_.wait_until(lock, deadline, done);
        lock.unlock();
        if (exited) {
            s->thread.join();
        } else {
            s->thread.detach();
            ++abandoned_threads_;
        }
    }
    if (abandoned_threads_ > 0)
        log::warning("pool: " + std::to_string(abandoned_threads_) +
                     " thread(s) still inside a job at shutdown; left running");
    // Reactors cancel what is left on their rings; make them look.
    const std::size_t lanes = lane_count_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < lanes; ++i) {
        lane_state* lane = lanes_[i].load(std::memory_order_acquire);
        if (lane && !lane->closed.load()) lane->waker->wake();
    }
    return abandoned_threads_;
}

void pool_core::spawn_locked() {
    for (unsigned i = 0; i < slots_.size(); ++i) {
        slot& s = *slots_[i];
        if (s.thread.joinable()) {
            if (!s.exited.load(std::memory_order_acquire)) continue;
            s.thread.join();  // left after an idle timeout; reuse its slot
        }
        s.exited.store(false);
        s.written_off.store(false);
        s.state.store(running);
        ++s.generation;
        live_.fetch_add(1);
        idle_.fetch_add(1);  // idle until it takes a job, so nobody spawns a twin
        s.thread = std::thread([this, i] { thread_main(i); });
        return;
    }
}

bool pool_core::write_off(long tid) noexcept {
    if (tid == 0) return false;
    for (auto& sp : slots_) {
        slot& s = *sp;
        if (s.tid.load() != tid || !s.in_job.load() || s.written_off.load()) continue;
        s.written_off.store(true);
        written_off_.fetch_add(1);
        live_.fetch_sub(1);
        // Capacity holds: below `threads`, a replacement starts now; else
        // the next push that finds nobody idle grows into the free place.
        try {
            std::lock_guard lock(threads_mutex_);
            if (started_ && !stopping() && (live_.load() < options_.threads || idle_.load() == 0)) spawn_locked();
        } catch (...) {
            log::warning("pool: no replacement for a written-off thread (cannot start a thread)");
        }
        return true;
    }
    return false;
}

void pool_core::retire_written_off(slot& s) {
    for (auto& h : hooks_)
        if (h.on_idle) h.on_idle();
    run_stop_hooks();
    written_off_.fetch_sub(1);
    s.tid.store(0);
    {
        std::lock_guard lock(exit_mutex_);
        s.exited.store(true, std::memory_order_release);
    }
    exited_.notify_all();
}

void pool_core::maybe_grow() {
    if (live_.load() >= options_.max_threads || idle_.load() != 0 || stopping()) return;
    if (options_.growth == growth_kind::blocked) {
        request_growth();  // the governor decides, from what the threads do
        return;
    }
    std::lock_guard lock(threads_mutex_);
    if (!started_ || stopping() || live_.load() >= options_.max_threads || idle_.load() != 0) return;
    spawn_locked();
}

bool pool_core::wake_one() noexcept {
    const unsigned n = static_cast<unsigned>(slots_.size());
    const unsigned start = wake_cursor_.fetch_add(1, std::memory_order_relaxed);
    for (unsigned k = 0; k < n; ++k) {
        slot& s = *slots_[(start + k) % n];
        int expected = parked;
        if (s.state.load() == parked && s.state.compare_exchange(expected, woken)) {
            parked_.fetch_sub(1);
            s.state.wake_one();
            return true;
        }
    }
    return false;
}

void pool_core::wake_all() noexcept {
    while (wake_one()) {
    }
}

void pool_core::on_job_pushed() {
    if (!ring_mode()) {
        job_semaphore_.signal();
        // A job pushed while every thread is busy grows the pool here: a
        // thread that took the queue's last job earlier saw nothing to
        // grow for, and the busy ones may block for long.
        if (idle_.fetch_add(0) == 0) maybe_grow();  // push → read the idle count (see leave_if_surplus)
        return;
    }
    if (parked_.fetch_add(0) > 0) {  // push → read the parked count
        if (wake_one()) return;
    }
    if (idle_.fetch_add(0) == 0) maybe_grow();  // push → read the idle count (see leave_if_surplus)
}

void pool_core::on_stalled_lane() {
    if (parked_.load() > 0 && wake_one()) return;
    maybe_grow();
}

void pool_core::add_reactor_cpus() noexcept {
    if (!options_.colocate) return;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) != 0) return;
    std::lock_guard lock(colocation_mutex_);
    CPU_OR(&colocation_cpus_, &colocation_cpus_, &mine);
    colocation_generation_.fetch_add(1, std::memory_order_release);
}

void pool_core::follow_reactor_cpus(unsigned& applied) noexcept {
    if (colocation_generation_.load(std::memory_order_acquire) == applied) return;
    cpu_set_t cpus;
    {
        std::lock_guard lock(colocation_mutex_);
        cpus = colocation_cpus_;
        applied = colocation_generation_.load(std::memory_order_relaxed);
    }
    if (const int err = pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus); err != 0)
        log::debug("pool: a thread stays where it was (setting its cores failed, error " + std::to_string(err) + ")");
}

void pool_core::push_completion(lane_state& lane, completion_entry entry) noexcept {
    if (lane.overflow_mode.load() || !lane.completions->try_push(entry)) {
        std::lock_guard lock(lane.overflow_mutex);
        // Re-checked under the lock: the reactor clears the mode only after
        // taking the list, and then the ring is the right place again.
        if (lane.overflow_mode.load() || !lane.completions->try_push(entry)) {
            lane.completion_overflow.push_back(entry);
            lane.overflow_mode.store(true);
        }
    }
    if (!ring_mode()) {
        lane.waker->wake();  // control arm: every crossing is a syscall
        return;
    }
    if (lane.reactor_waiting.exchange(false)) lane.waker->wake();  // push → read the announcement
}

bool pool_core::take_job(lane_state*& lane, queued_job& j) noexcept {
    static thread_local std::size_t cursor = 0;
    const std::size_t n = lane_count_.load(std::memory_order_acquire);
    for (std::size_t k = 0; k < n; ++k) {
        lane_state* l = lanes_[(cursor + k) % n].load(std::memory_order_acquire);
        if (l && l->jobs->try_pop(j)) {
            l->taken.fetch_add(1, std::memory_order_relaxed);
            cursor = (cursor + k + 1) % n;
            lane = l;
            return true;
        }
    }
    return false;
}

void pool_core::run_job(lane_state& lane, job* j, job_counters& counted) noexcept {
    if (j->finishes_later()) {
        j->run(*new deferred_port(lane, j));
        count_done(counted);
        return;
    }
    lane_port port(lane);
    j->run(port);
    // Counted before the completion is pushed: a reactor that has run the
    // completion reads stats() that include the job.
    count_done(counted);
    push_completion(lane, {j, completion_entry::done});
}

void pool_core::window_pause() const noexcept {
    if (options_.test_park_window.count() > 0) std::this_thread::sleep_for(options_.test_park_window);
}

bool pool_core::unpark(slot& s) noexcept {
    int expected = parked;
    if (s.state.compare_exchange(expected, running)) {
        parked_.fetch_sub(1);
        return true;
    }
    // A waker claimed us first (and took us out of parked_): its wake is for
    // us, and we are up. Simpler than with a wake eventfd, where we had to
    // wait here for the waker's signal and read it, or the next park would
    // have returned at once: the wake is the word, which we reset here, not
    // a token left in the kernel. The waker's FUTEX_WAKE, if it comes after
    // this, finds nobody waiting or ends a later wait early, and that wait
    // re-reads the word and goes back to sleep.
    s.state.store(running);
    return false;
}

void pool_core::run_start_hooks() {
    for (auto& h : hooks_)
        if (h.on_start) h.on_start();
}

void pool_core::run_stop_hooks() {
    for (auto it = hooks_.rbegin(); it != hooks_.rend(); ++it)
        if (it->on_stop) it->on_stop();
}

// A push wakes a parked thread or, with nobody idle, grows the pool; a thread
// that counts as idle is trusted to find the job itself. So a thread on its
// way out must stop counting as idle before it looks for work a last time
// (the announce/re-check pair again, on idle_): either its re-check finds
// the job, or the push reads idle_ without it and grows. The grow needs a
// free slot, and this thread's is free only once it has decided to go: the
// re-check and the decision happen under threads_mutex_, which the grow
// takes to spawn, so a grow that found no slot is followed by a re-check
// that sees its job. The hooks (on_stop takes the GIL) run before the lock,
// so a grow never waits for Python; they run again (on_start) if it stays.
std::optional<pool_core::idle_end> pool_core::leave_if_surplus(slot& s, lane_state*& lane, queued_job& j) {
    if (live_.load() <= options_.threads) return std::nullopt;
    idle_.fetch_sub(1);  // announce → re-check
    run_stop_hooks();
    std::unique_lock lock(threads_mutex_);
    // Stopping: no new job (the reactors cancel what is left), and it leaves.
    const bool got = !stopping() && (ring_mode() ? take_job(lane, j)
                                                 : job_semaphore_.wait(std::chrono::nanoseconds(0)) && take_job(lane, j));
    if (!got) {
        unsigned live = live_.load();
        while (live > options_.threads) {
            if (!live_.compare_exchange_weak(live, live - 1)) continue;
            // The slot is free from here: the next spawn joins this thread
            // (which only returns now) and reuses it.
            close_probe_locked(s);
            std::lock_guard exit_lock(exit_mutex_);
            s.exited.store(true, std::memory_order_release);
            return idle_end::left;
        }
    }
    idle_.fetch_add(1);  // stays: idle again until thread_main takes the job
    lock.unlock();
    run_start_hooks();
    return got ? std::optional(idle_end::job) : std::nullopt;
}

pool_core::idle_end pool_core::idle_ring(slot& s, lane_state*& lane, queued_job& j) {
    using clock = std::chrono::steady_clock;
    // 1. Spin: a job arriving within spin costs no syscall on either side.
    // Pauses only, never sched_yield: a yielding thread stays runnable, so
    // on a busy core it waits out another thread's whole time slice while
    // jobs queue behind it, and no wake can bring it back sooner (it is not
    // parked). That was the collapse of whole benchmark rounds on two cores.
    if (options_.spin.count() > 0) {
        const auto deadline = clock::now() + options_.spin;
        for (;;) {
            if (stopping()) return idle_end::stop;
            if (take_job(lane, j)) return idle_end::job;
            if (clock::now() >= deadline) break;
            for (int i = 0; i < 64; ++i) cpu_relax();
        }
    }
    for (;;) {
        // 2. Announce, 3. re-check, 4. only then block.
        s.state.store(parked);
        parked_.fetch_add(1);
        window_pause();
        if (stopping()) {
            unpark(s);
            return idle_end::stop;
        }
        if (take_job(lane, j)) {
            unpark(s);
            return idle_end::job;
        }
        // One FUTEX_WAIT, refused by the kernel if a waker has already
        // moved the word to `woken`.
        if (options_.batch_sched) set_scheduling(SCHED_BATCH, s.batch);
        if (options_.growth == growth_kind::blocked) parks_.fetch_add(1, std::memory_order_relaxed);
        if (s.state.wait_while(parked, options_.idle_timeout)) {
            s.state.store(running);  // the waker moved us to `woken`
        } else {
            window_pause();  // a wake may claim us between the timeout and unpark
            // Unparked by ourselves, no waker can count on us any more.
            if (unpark(s))
                if (const auto end = leave_if_surplus(s, lane, j)) return *end;
        }
        if (stopping()) return idle_end::stop;
        if (take_job(lane, j)) return idle_end::job;
        // Woken for a job a sibling already took: spin no more, park again.
    }
}

pool_core::idle_end pool_core::idle_none(slot& s, lane_state*& lane, queued_job& j) {
    for (;;) {
        if (stopping()) return idle_end::stop;
        s.state.store(parked);  // observability only; wakes go through the semaphore
        parked_.fetch_add(1);
        if (options_.batch_sched) set_scheduling(SCHED_BATCH, s.batch);
        if (options_.growth == growth_kind::blocked) parks_.fetch_add(1, std::memory_order_relaxed);
        const bool got = job_semaphore_.wait(options_.idle_timeout);
        parked_.fetch_sub(1);
        s.state.store(running);
        if (stopping()) return idle_end::stop;
        if (got) {
            if (take_job(lane, j)) return idle_end::job;
            continue;  // its job was cancelled by a stopping reactor
        }
        if (const auto end = leave_if_surplus(s, lane, j)) return *end;
    }
}

void pool_core::thread_main(unsigned index) {
    slot& s = *slots_[index];
    const std::string name = "m0-pool-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.c_str());
    s.tid.store(::gettid());
    if (have_start_cpus_) pthread_setaffinity_np(pthread_self(), sizeof start_cpus_, &start_cpus_);
    if (options_.growth == growth_kind::blocked) open_probe(s);
    run_start_hooks();

    lane_state* lane = nullptr;
    queued_job j;
    unsigned cpus_applied = 0;
    idle_end end = idle_end::job;
    for (;;) {
        if (stopping() || !take_job(lane, j)) {
            // Before any wait: a frontend gives up what it kept from its last
            // job (the GIL), so a spinning or parked thread holds nothing.
            for (auto& h : hooks_)
                if (h.on_idle) h.on_idle();
            end = ring_mode() ? idle_ring(s, lane, j) : idle_none(s, lane, j);
            if (end != idle_end::job) break;
        }
        // Back from a park: the job runs under the default policy (see set_scheduling).
        if (s.batch) set_scheduling(SCHED_OTHER, s.batch);
        // A job taken after a reactor reported its cores runs on them.
        if (options_.colocate) follow_reactor_cpus(cpus_applied);
        idle_.fetch_sub(1);
        if (lane->jobs->maybe_nonempty()) {
            // Chained wake: leave no job behind a single wake (the `none`
            // pool's semaphore already carries one wake per job); with
            // nobody idle, grow.
            if (ring_mode() && parked_.fetch_add(0) > 0) {
                wake_one();
            } else if (idle_.load() == 0) {
                maybe_grow();
            }
        }
        count_taken(s.counted, j.queued_ns);
        s.in_job.store(true, std::memory_order_relaxed);
        run_job(*lane, j.j, s.counted);
        s.in_job.store(false, std::memory_order_relaxed);
        if (s.written_off.load()) {
            retire_written_off(s);  // live_ and idle_ no longer count it
            return;
        }
        idle_.fetch_add(1);
    }

    // A thread that left gave up its counts, ran its hooks and handed its slot
    // back (which may already hold its successor): only the notify is left.
    if (end != idle_end::left) {
        s.tid.store(0);
        run_stop_hooks();
        if (options_.growth == growth_kind::blocked) {
            std::lock_guard lock(threads_mutex_);
            close_probe_locked(s);
        }
        idle_.fetch_sub(1);
        live_.fetch_sub(1);
        std::lock_guard lock(exit_mutex_);
        s.exited.store(true, std::memory_order_release);
    }
    exited_.notify_all();
}

}  // namespace m0::pool
