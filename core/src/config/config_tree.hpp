#pragma once
// The document behind every config_node: the YAML converted into a small
// owned tree that remembers where each value came from (file:line:col or the
// --set that wrote it), plus the effective configuration recorded by getters.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <m0/config.hpp>

namespace m0 {
namespace config_detail {

struct entry;

struct value {
    enum class kind { null, scalar, sequence, map };
    kind type = kind::null;
    std::string scalar;
    std::vector<value> items;    // kind::sequence
    std::vector<entry> entries;  // kind::map, in file order
    std::string where;           // "file:line:col" of the value, or "--set key=value"
    bool from_set = false;       // written by --set: relative paths resolve against the cwd
    bool is_string = false;      // effective tree only: quote it when it reads as another type
};

struct entry {
    std::string key;
    std::string where;  // of the key: "key:" is what a user looks for in the file
    value val;
};

// One step of a key path: a map key or a sequence index.
using segment = std::variant<std::string, std::size_t>;

// "frontend.routes[2].status" -> {"frontend", "routes", 2, "status"}; keys with
// '.', '[' or '"' are written ["a.b"]. Throws std::invalid_argument.
std::vector<segment> split_path(std::string_view path);
std::string join_path(std::string_view parent, std::string_view key);
std::string join_path(std::string_view parent, std::size_t index);

}  // namespace config_detail

class config_tree {
public:
    std::string file_name;
    std::string base_dir;  // absolute
    config_detail::value root;
    config_detail::value effective;
};

}  // namespace m0
