#define BOOST_TEST_MODULE load_table
// The deployment's load table (core) and one process's side of it
// (libs/reactors deployment_share): what each serving process shows the
// others sharing a socket with it, and who may write a row.
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <m0/reactors/deployment_share.hpp>
#include "server/load_table.hpp"

using m0::reactor_load;
using m0::reactors::deployment_share;
using m0::reactors::least_loaded;

namespace {

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

least_loaded others_seen_by(const deployment_share& share) {
    least_loaded seen;
    share.consider_others(seen);
    return seen;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_process_claims_its_row_absent_and_a_row_beyond_the_table_gets_none) {
    m0::load_table table(2, 3);
    const m0::deployment_load row1 = table.for_process(1);
    BOOST_REQUIRE(row1.table != nullptr);
    BOOST_TEST(row1.processes == 2u);
    BOOST_TEST(row1.reactors == 3u);
    for (unsigned r = 0; r < 3; ++r) {
        BOOST_TEST(row1.entry(1, r)->live.load() == reactor_load::absent);
        BOOST_TEST(row1.entry(1, r)->owner.load() == static_cast<std::int32_t>(::getpid()));
    }
    BOOST_TEST(table.for_process(2).table == nullptr);
    BOOST_TEST(!deployment_share(table.for_process(2)).active());
}

BOOST_AUTO_TEST_CASE(the_others_fold_into_the_least_loaded_one_and_absent_entries_count_for_nothing) {
    m0::load_table table(3, 2);
    const deployment_share self(table.for_process(0));
    const deployment_share second(table.for_process(1));
    const deployment_share third(table.for_process(2));
    BOOST_TEST(!others_seen_by(self).any());  // nobody takes connections yet

    self.publish(0, 1, true);  // its own row: never among the others
    second.publish(0, 7, false);
    second.publish(1, 4, false);
    third.publish(0, 4, true);  // as loaded as second's reactor 1, and waiting: preferred
    // third's reactor 1 never started: absent
    least_loaded seen = others_seen_by(self);
    BOOST_TEST(seen.any());
    BOOST_TEST(seen.open == 4u);
    BOOST_TEST(seen.waits);
    BOOST_TEST(seen.total == 15u);

    third.withdraw(0);  // draining: takes nothing, so nobody waits for it
    seen = others_seen_by(self);
    BOOST_TEST(seen.open == 4u);
    BOOST_TEST(!seen.waits);
    BOOST_TEST(seen.total == 11u);
}

// A replacement process (recycling, a crashed process restarted) claims its
// predecessor's row and serves before the predecessor drains: the
// predecessor's listeners, draining, must neither mark the successor's
// entries absent (the others would stop leaving it connections) nor write
// their own counts over them.
BOOST_AUTO_TEST_CASE(a_predecessor_leaves_its_replacements_row_alone) {
    m0::load_table table(2, 1);
    const deployment_share predecessor(table.for_process(0));
    const deployment_share other(table.for_process(1));
    predecessor.publish(0, 3, false);
    BOOST_TEST(others_seen_by(other).open == 3u);

    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // The replacement: its own pid claims row 0 of the shared mapping.
        const deployment_share successor(table.for_process(0));
        successor.publish(0, 5, true);
        ::_exit(0);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    predecessor.publish(0, 9, false);
    predecessor.withdraw(0);
    const least_loaded seen = others_seen_by(other);
    BOOST_TEST(seen.any());
    BOOST_TEST(seen.open == 5u);
    BOOST_TEST(seen.waits);
}

// A listener that sits out while connections are queued wakes the one it
// leaves them to through that one's entry: an eventfd per entry, made before
// the first fork (so a forked process has it at the same number).
BOOST_AUTO_TEST_CASE(each_entry_has_its_own_wake_and_the_least_loaded_one_is_woken_through_it) {
    m0::load_table table(2, 2);
    const deployment_share self(table.for_process(0));
    const deployment_share other(table.for_process(1));
    const int mine = self.wake_fd(1);
    BOOST_TEST(mine >= 0);
    BOOST_TEST(self.wake_fd(0) != mine);
    BOOST_TEST(other.wake_fd(1) != mine);
    BOOST_TEST(self.wake_fd(2) == -1);  // beyond the row
    BOOST_TEST(!deployment_share().active());
    BOOST_TEST(deployment_share().wake_fd(0) == -1);

    self.publish(0, 3, false);
    self.publish(1, 2, true);
    const least_loaded seen = others_seen_by(other);
    BOOST_TEST(seen.open == 2u);
    BOOST_TEST(seen.wake_fd == mine);

    BOOST_TEST(!readable(mine));
    deployment_share::wake(seen.wake_fd);
    deployment_share::wake(seen.wake_fd);  // one pending wake, however many
    BOOST_TEST(readable(mine));
    BOOST_TEST(!readable(self.wake_fd(0)));
    deployment_share::consume_wake(mine);
    BOOST_TEST(!readable(mine));
    deployment_share::wake(-1);  // no table: nothing to wake

    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        // A serving process: the same entry's wake at the same number.
        deployment_share::wake(table.for_process(1).entry(0, 1)->wake_fd);
        ::_exit(0);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_TEST(readable(mine));
}

// The table under the threads of one process (`--workers N --threads M`:
// every reactor thread publishes its entry and reads the others' on each
// accept) and across rows at once: relaxed atomics and eventfd writes only,
// which ThreadSanitizer checks here (label tsan). Each thread stands for a
// reactor; it publishes, folds the others, wakes the least loaded one and
// takes its own wakes, then publishes a last value that everyone must see.
BOOST_AUTO_TEST_CASE(reactors_publishing_folding_and_waking_at_once_leave_every_last_value_visible) {
    constexpr unsigned rows = 3, reactors = 2, rounds = 20000;
    m0::load_table table(rows, reactors);
    std::vector<deployment_share> shares;
    for (unsigned row = 0; row < rows; ++row) shares.emplace_back(table.for_process(row));
    std::atomic<unsigned> wakes_taken{0};
    std::vector<std::thread> threads;
    for (unsigned row = 0; row < rows; ++row)
        for (unsigned r = 0; r < reactors; ++r)
            threads.emplace_back([&, row, r] {
                const deployment_share& share = shares[row];
                const int own = share.wake_fd(r);
                for (unsigned i = 0; i < rounds; ++i) {
                    share.publish(r, (i * 7 + row) % 11, i % 3 == 0);
                    least_loaded least;
                    share.consider_others(least);
                    if (least.waits && i % 5 == 0) deployment_share::wake(least.wake_fd);
                    if (readable(own)) {
                        deployment_share::consume_wake(own);
                        wakes_taken.fetch_add(1, std::memory_order_relaxed);
                    }
                }
                // The last value: reactor r of row `row` holds 100 + 10 * row + r and waits.
                share.publish(r, 100 + 10 * row + r, true);
            });
    for (auto& t : threads) t.join();
    BOOST_TEST(wakes_taken.load() > 0u);  // the wakes reached their reactors
    for (unsigned row = 0; row < rows; ++row) {
        const least_loaded seen = others_seen_by(shares[row]);
        // The least loaded of the other rows: row 0's reactor 0 (100), or
        // row 1's (110) as row 0 sees it.
        const unsigned expected_row = row == 0 ? 1 : 0;
        BOOST_TEST(seen.open == 100u + 10 * expected_row);
        BOOST_TEST(seen.waits);
        BOOST_TEST(seen.wake_fd == shares[expected_row].wake_fd(0));
        std::uint64_t total = 0;
        for (unsigned other = 0; other < rows; ++other)
            if (other != row)
                for (unsigned r = 0; r < reactors; ++r) total += 100 + 10 * other + r;
        BOOST_TEST(seen.total == total);
    }
}
