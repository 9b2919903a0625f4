#pragma once
// The `static` key of a frontend section, as validated plain data. Every
// frontend that serves static mounts parses it here, so they all accept the
// same keys and report the same errors.
#include <string>
#include <vector>

namespace m0 {
class config_node;
}

namespace m0::static_files {

struct static_mount_config {
    std::string prefix = "/";          // always ends with '/'
    std::string root;                  // absolute, canonical
    std::string index = "index.html";  // empty: a directory is 404
};

// Reads `section.static`: absent (no mounts), one map {prefix, root, index},
// or a list of them with distinct prefixes. Throws m0::config_error located
// at the offending node.
std::vector<static_mount_config> parse_static_mounts(const config_node& section);

}  // namespace m0::static_files
