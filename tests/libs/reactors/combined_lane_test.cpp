// One worker loop over the lanes of several executors: every call fans out,
// and a wait happens only when every lane agreed to it.
#define BOOST_TEST_MODULE combined_lane
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include <m0/reactors/combined_lane.hpp>

namespace {

// Records what the combined lane asked of it.
class recording_lane final : public m0::executor_lane {
public:
    recording_lane(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}

    std::size_t pending = 0;    // completions waiting: refuses a wait while > 0
    std::size_t in_flight = 0;
    std::size_t submitted = 0;

    void submit(std::unique_ptr<m0::job>) override { ++submitted; }
    std::size_t poll_completions() override {
        log_.push_back(name_ + ".poll");
        const std::size_t ran = pending;
        pending = 0;
        return ran;
    }
    bool prepare_to_wait() override {
        log_.push_back(name_ + ".prepare");
        return pending == 0;
    }
    void finished_waiting() override { log_.push_back(name_ + ".finished"); }
    void on_reactor_pass() override { log_.push_back(name_ + ".pass"); }
    std::size_t jobs_in_flight() const override { return in_flight; }

private:
    std::string name_;
    std::vector<std::string>& log_;
};

struct three_lanes {
    std::vector<std::string> log;
    recording_lane* a;
    recording_lane* b;
    recording_lane* c;
    std::unique_ptr<m0::reactors::combined_lane> combined;

    three_lanes() {
        std::vector<std::unique_ptr<m0::executor_lane>> lanes;
        for (const char* name : {"a", "b", "c"}) lanes.push_back(std::make_unique<recording_lane>(name, log));
        a = static_cast<recording_lane*>(lanes[0].get());
        b = static_cast<recording_lane*>(lanes[1].get());
        c = static_cast<recording_lane*>(lanes[2].get());
        combined = std::make_unique<m0::reactors::combined_lane>(std::move(lanes));
    }
};

using strings = std::vector<std::string>;

}  // namespace

BOOST_FIXTURE_TEST_CASE(polls_every_lane_and_sums_what_ran, three_lanes) {
    a->pending = 2;
    c->pending = 3;
    BOOST_TEST(combined->poll_completions() == 5u);
    combined->on_reactor_pass();
    BOOST_TEST(log == (strings{"a.poll", "b.poll", "c.poll", "a.pass", "b.pass", "c.pass"}));
}

BOOST_FIXTURE_TEST_CASE(waits_only_when_every_lane_agrees, three_lanes) {
    BOOST_TEST(combined->prepare_to_wait());
    combined->finished_waiting();
    BOOST_TEST(log == (strings{"a.prepare", "b.prepare", "c.prepare", "a.finished", "b.finished", "c.finished"}));
}

BOOST_FIXTURE_TEST_CASE(a_lane_with_completions_cancels_the_wait_of_those_before_it, three_lanes) {
    b->pending = 1;
    BOOST_TEST(!combined->prepare_to_wait());
    // a announced and is told the wait is over; b refused, so it is not;
    // c was never asked.
    BOOST_TEST(log == (strings{"a.prepare", "b.prepare", "a.finished"}));
}

BOOST_FIXTURE_TEST_CASE(jobs_in_flight_is_the_sum_and_submit_goes_to_the_first, three_lanes) {
    a->in_flight = 1;
    b->in_flight = 4;
    c->in_flight = 2;
    BOOST_TEST(combined->jobs_in_flight() == 7u);
    combined->submit(nullptr);
    BOOST_TEST(a->submitted == 1u);
    BOOST_TEST(b->submitted + c->submitted == 0u);
    BOOST_TEST(!combined->post_to_job(nullptr));
}

BOOST_AUTO_TEST_CASE(needs_a_lane) {
    BOOST_CHECK_THROW(m0::reactors::combined_lane({}), std::invalid_argument);
}
