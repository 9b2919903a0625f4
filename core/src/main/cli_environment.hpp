#pragma once
// Every m0 flag as an environment variable (M0_WORKERS=4 for --workers 4),
// for container deployments where the command is fixed and the environment
// is what changes (as GRANIAN_* and GUNICORN_CMD_ARGS serve).
#include <string>
#include <vector>

#include <boost/program_options/options_description.hpp>

namespace m0 {

// M0_ + the flag's long name in capitals, '-' as '_': "log-level" → M0_LOG_LEVEL.
std::string environment_name(const std::string& flag);

// The M0_ variables of this process that name a flag of `flags`, as
// command-line tokens ("--workers=4"), in environ's order. A switch
// (no value) is given by 1/true/yes/on and left out by 0/false/no/off/empty;
// a repeatable flag (a vector value) holds one value per line, or values
// separated by ';' (except --set, whose YAML values may hold a ';').
// `skipped`: flags never read from the environment (--help, --check...).
// An M0_ name near a flag's (a typo: M0_WORKER) adds a warning; the names
// m0 reads for other purposes (M0_POOL_RING, ...) and those of the test and
// build tools are silent. Throws std::invalid_argument for a switch whose
// value is neither.
std::vector<std::string> environment_arguments(const boost::program_options::options_description& flags,
                                               const std::vector<std::string>& skipped,
                                               std::vector<std::string>& warnings);

}  // namespace m0
