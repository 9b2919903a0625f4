#pragma once
// Configuration seam: a read-only view of one YAML node that plugins use to
// validate their own section.
//
// Every getter records the value it returned (the default when the key is
// absent) into the effective configuration that `m0 --check` prints, and
// every error names file:line:column, the full key path and what was expected.
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <m0/api.hpp>

namespace m0 {

// Thrown for any invalid configuration. what() is the full, user-facing
// message, e.g. "m0.yaml:4:12: server.threads: expected an integer in
// 1..256, found 'four'"; one error a line when it holds several.
class M0_API config_error : public std::runtime_error {
public:
    explicit config_error(const std::string& error);
    explicit config_error(const char* error);
    explicit config_error(std::vector<std::string> errors);
    // Each error on its own, in the order what() gives them.
    const std::vector<std::string>& errors() const noexcept;

private:
    // Shared: copying an exception must not throw.
    std::shared_ptr<const std::vector<std::string>> errors_;
};

// Collects the errors of independent validation steps, so that one run
// reports every error of a config as a compiler would (`m0 --check`). The
// core checks its sections this way and builds every plugin this way; a
// plugin checks each key of its section as a step of its own and throws them
// all at the end:
//
//   m0::config_errors errors;
//   errors.check([&] { threads_ = section.integer("threads", 1, 1, 64); });
//   errors.check([&] { mode_ = section.one_of("mode", "fast", {"fast", "safe"}); });
//   errors.throw_if_any();
//
// A step that depends on another goes in the same check() (or runs only if
// that one succeeded), so one mistake is reported once and not again as a
// consequence.
class M0_API config_errors {
public:
    // Runs one step; a config_error it throws is kept (each of its errors)
    // and false returned, so that the caller goes on with the next step.
    template <class Step>
    bool check(Step&& step) {
        try {
            step();
            return true;
        } catch (const config_error& e) {
            add(e);
            return false;
        }
    }
    // Keeps each error of `error`, except one already kept (two plugins that
    // read the same section report its mistake once).
    void add(const config_error& error);
    bool empty() const noexcept;
    std::size_t size() const noexcept;
    // Throws one config_error holding every error kept, in YAML order: by
    // line and column, then those without a position (a --set, a message
    // with no location) in the order they came. Returns if there is none.
    void throw_if_any() const;

private:
    std::vector<std::string> errors_;
};

class config_tree;

class M0_API config_node {
public:
    // The node's full key path ("server.listen", "frontend.routes[2].path").
    const std::string& path() const;
    // "file:line:col" of the node, or of its parent when the key is absent.
    std::string where() const;
    bool present() const;  // the key exists in the YAML (or a --set)
    // Directory of the config file this node came from; relative paths in a
    // config (static roots, python.path) resolve against it. For --set values
    // and documents not read from a file: the current working directory.
    std::string base_dir() const;
    bool is_map() const;
    bool is_sequence() const;
    bool is_scalar() const;

    bool has(std::string_view key) const;
    config_node child(std::string_view key) const;  // absent child → present() == false
    std::vector<config_node> items() const;          // elements of a sequence (error otherwise)
    std::vector<std::string> keys() const;           // keys of a map, in file order

    // Typed getters: absent → default (recorded as effective); wrong type or
    // out of range → config_error naming the key.
    std::string string(std::string_view key, std::string_view def) const;
    std::optional<std::string> optional_string(std::string_view key) const;
    std::int64_t integer(std::string_view key, std::int64_t def, std::int64_t min, std::int64_t max) const;
    bool boolean(std::string_view key, bool def) const;
    double number(std::string_view key, double def, double min, double max) const;
    // "30s", "250ms", "2m", "10us" or a bare number of seconds.
    std::chrono::nanoseconds duration(std::string_view key, std::chrono::nanoseconds def) const;
    // "64k", "1m", "2g" (powers of 1024) or a bare number of bytes.
    std::uint64_t byte_size(std::string_view key, std::uint64_t def, std::uint64_t max) const;
    // A scalar or a sequence of scalars; a scalar counts as a list of one.
    std::vector<std::string> string_list(std::string_view key, const std::vector<std::string>& def) const;
    std::string one_of(std::string_view key, std::string_view def,
                       std::initializer_list<std::string_view> allowed) const;

    // Records `value` as the effective value of `key` in place of what the
    // getters recorded: for a setting the plugin takes from elsewhere (an
    // environment override), so that `m0 --check` shows what will run.
    void set_effective(std::string_view key, std::string_view value) const;
    void set_effective(std::string_view key, const std::vector<std::string>& values) const;
    // The same for a boolean (shown as true/false, not as a string).
    void set_effective_boolean(std::string_view key, bool value) const;

    // The node itself as a scalar (for sequence items).
    std::string as_string() const;

    // Refuses any key of this map not in `known`, suggesting the nearest
    // known key for a likely typo; one config_error names every unknown key.
    // Call once per section you own.
    void allow_keys(std::initializer_list<std::string_view> known) const;
    void allow_keys(const std::vector<std::string>& known) const;

    // Throws a config_error located at `key` (or at this node when empty).
    [[noreturn]] void fail(std::string_view key, std::string_view message) const;

    config_node(std::shared_ptr<config_tree> tree, std::string path);
    config_node(const config_node&);
    config_node& operator=(const config_node&);
    ~config_node();

private:
    std::shared_ptr<config_tree> tree_;
    std::string path_;
};

// A whole deployment: the YAML file plus command-line overrides.
class M0_API config_document {
public:
    // Loads `file` (empty: start from an empty document). Throws config_error
    // on a YAML syntax error, with file:line:col.
    static config_document load(const std::string& file);
    static config_document from_string(std::string_view yaml, std::string_view name);

    // Applies `key.path=value` (value parsed as a YAML scalar or flow node).
    // Errors point at "--set key.path=value".
    void set(std::string_view assignment);

    config_node root() const;
    // The effective configuration recorded so far, as YAML text.
    std::string effective_yaml() const;
    // Top-level sections of the document that no getter has read yet: once
    // every plugin has validated its section, what is left is read by nobody.
    std::vector<std::string> unread_sections() const;
    const std::string& file_name() const;

private:
    std::shared_ptr<config_tree> tree_;
};

// Nearest candidate by edit distance, if close enough to be a likely typo.
M0_API std::optional<std::string> nearest_key(std::string_view key,
                                              const std::vector<std::string>& candidates);

}  // namespace m0
