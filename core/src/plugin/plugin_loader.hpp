#pragma once
// Finds, loads and validates plugin shared objects (docs/plugins.md).
//
// A plugin is refused, with a message naming the file, the field, what was
// expected and what was found, when it cannot be loaded, exports no
// descriptor, or its descriptor does not match this core (magic, ABI, size,
// build signature, kind) or repeats a name already loaded from another file.
// Loaded plugins are never unloaded: their code may be referenced until exit.
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <m0/api.hpp>
#include <m0/plugin.hpp>

namespace m0 {

class M0_API plugin_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// No file m0-<kind>-<name>.so in any search directory.
class M0_API plugin_not_found : public plugin_error {
public:
    using plugin_error::plugin_error;
};

struct loaded_plugin {
    const plugin_descriptor* descriptor;
    std::string path;
};

class M0_API plugin_loader {
public:
    explicit plugin_loader(std::vector<std::string> search_dirs);

    // plugins.path entries (already absolute), then $M0_PLUGIN_PATH
    // (':'-separated), then <dir of libm0core>/m0/plugins (or, only if
    // libm0core cannot be located, <dir of the executable>/../lib/m0/plugins),
    // so that build/bin/m0 finds build/lib/m0/plugins, an installed bin/m0
    // finds lib/m0/plugins, and m0 hosted in a Python (the wheel) finds the
    // plugins packaged beside its libm0core and nothing beside the Python.
    static std::vector<std::string> default_search_dirs(const std::vector<std::string>& configured);

    // Loads m0-<kind>-<name>.so from the first search dir that has it.
    // Throws plugin_error (plugin_not_found when no dir has the file).
    const loaded_plugin& load(plugin_kind kind, std::string_view name);
    // Loads a given file. Loading the same file again returns the same entry.
    const loaded_plugin& load_file(const std::string& path);

    struct listing {
        std::string path;
        const plugin_descriptor* descriptor;  // null when refused
        std::string error;                    // the refusal, empty when loaded
    };
    // Every m0-*.so in the search dirs (sorted by name within a dir), loaded
    // and validated, or with its refusal.
    std::vector<listing> list_all();

    const std::vector<std::string>& search_dirs() const;

    // Names of the plugins of `kind` whose files are in the search dirs
    // (m0-<kind>-<name>.so; nothing is loaded), sorted, each once: what a
    // misspelled `type:` is compared with.
    std::vector<std::string> names_found(plugin_kind kind) const;

private:
    std::vector<std::string> search_dirs_;
    // deque: references handed out stay valid as more plugins load.
    std::deque<loaded_plugin> loaded_;
    std::map<std::string, const loaded_plugin*> by_file_;  // canonical path → entry
    std::map<std::string, const loaded_plugin*> by_name_;  // "<kind>/<name>" → entry
};

}  // namespace m0
