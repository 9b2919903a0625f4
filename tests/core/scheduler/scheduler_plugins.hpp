#pragma once
// The scheduler plugins of this build, loaded as m0 loads them, for the tests
// that run reactors: each scheduler is built by its plugin's factory from a
// config, as in a deployment.
#include <memory>
#include <string>
#include <vector>

#include <m0/executor.hpp>
#include <m0/frontend.hpp>
#include <m0/scheduler.hpp>

namespace m0::test {

// Every scheduler configuration the contract tests run under: a label and
// the YAML of its `scheduler:` section.
struct scheduler_config {
    std::string label;
    std::string yaml;
};
const std::vector<scheduler_config>& every_scheduler();
// The YAML for a label of every_scheduler().
const std::string& scheduler_yaml(const std::string& label);

// The scheduler a config describes (kept for the test's lifetime).
scheduler& load_scheduler(const std::string& yaml);

// Reactors of one process under the scheduler a config describes.
std::unique_ptr<reactor_set> make_reactors(const std::string& yaml, frontend& fe, std::vector<executor*> executors,
                                           scheduler_options options);

// Options for `reactors` reactors on `addresses` loopback addresses (port 0).
scheduler_options loopback_options(unsigned reactors, std::size_t addresses = 1);

}  // namespace m0::test
