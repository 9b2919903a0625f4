#include <m0/reactors/combined_lane.hpp>

#include <stdexcept>

namespace m0::reactors {

combined_lane::combined_lane(std::vector<std::unique_ptr<executor_lane>> lanes) : lanes_(std::move(lanes)) {
    if (lanes_.empty()) throw std::invalid_argument("combined_lane needs at least one lane");
}

void combined_lane::submit(std::unique_ptr<job> j) { lanes_.front()->submit(std::move(j)); }

std::size_t combined_lane::poll_completions() {
    std::size_t ran = 0;
    for (auto& l : lanes_) ran += l->poll_completions();
    return ran;
}

bool combined_lane::prepare_to_wait() {
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
        if (lanes_[i]->prepare_to_wait()) continue;
        // Lane i must not be told finished_waiting; those before it announced.
        for (std::size_t j = 0; j < i; ++j) lanes_[j]->finished_waiting();
        return false;
    }
    return true;
}

void combined_lane::finished_waiting() {
    for (auto& l : lanes_) l->finished_waiting();
}

void combined_lane::on_reactor_pass() {
    for (auto& l : lanes_) l->on_reactor_pass();
}

std::size_t combined_lane::jobs_in_flight() const {
    std::size_t n = 0;
    for (const auto& l : lanes_) n += l->jobs_in_flight();
    return n;
}

bool combined_lane::post_to_job(std::unique_ptr<job_task> task) { return lanes_.front()->post_to_job(std::move(task)); }

}  // namespace m0::reactors
