// config_node / config_document: the YAML document as an owned tree with
// locations, typed getters that record the effective configuration, and --set.
#include <m0/config.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "config/config_tree.hpp"
#include "config/config_values.hpp"
#include "config/yaml_syntax.hpp"

namespace m0 {
namespace config_detail {

std::vector<segment> split_path(std::string_view path) {
    std::vector<segment> out;
    const auto bad = [&] { throw std::invalid_argument("invalid key path '" + std::string(path) + "'"); };
    std::size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '[' && i + 1 < path.size() && path[i + 1] == '"') {
            std::string key;
            for (i += 2; i < path.size() && path[i] != '"'; ++i) {
                if (path[i] == '\\' && i + 1 < path.size()) ++i;
                key += path[i];
            }
            if (i + 1 >= path.size() || path[i + 1] != ']') bad();
            i += 2;
            out.emplace_back(std::move(key));
        } else if (path[i] == '[') {
            const auto close = path.find(']', i);
            const auto index = close == std::string_view::npos ? std::nullopt
                                                               : parse_integer(path.substr(i + 1, close - i - 1));
            if (!index || *index < 0) bad();
            out.emplace_back(static_cast<std::size_t>(*index));
            i = close + 1;
        } else {
            if (path[i] == '.') {
                if (out.empty()) bad();
                ++i;
            }
            const auto end = std::min(path.find_first_of(".[", i), path.size());
            if (end == i) bad();
            out.emplace_back(std::string(path.substr(i, end - i)));
            i = end;
        }
    }
    return out;
}

std::string join_path(std::string_view parent, std::string_view key) {
    if (key.empty() || key.find_first_of(".[]\"\\") != std::string_view::npos) {
        std::string quoted(parent);
        quoted += "[\"";
        for (const char c : key) {
            if (c == '"' || c == '\\') quoted += '\\';
            quoted += c;
        }
        return quoted + "\"]";
    }
    return parent.empty() ? std::string(key) : std::string(parent) + "." + std::string(key);
}

std::string join_path(std::string_view parent, std::size_t index) {
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

}  // namespace config_detail

namespace {

using config_detail::entry;
using config_detail::join_path;
using config_detail::segment;
using config_detail::split_path;
using config_detail::value;
using kind = value::kind;

[[noreturn]] void throw_at(const std::string& where, const std::string& path, std::string_view message) {
    std::string text = where + ": ";
    if (!path.empty()) text += path + ": ";
    throw config_error(text + std::string(message));
}

std::string describe(const value* v) {
    if (v == nullptr || v->type == kind::null) return "nothing";
    if (v->type == kind::sequence) return "a list";
    if (v->type == kind::map) return "a map";
    return "'" + v->scalar + "'";
}

// yaml-cpp marks are 0-based; editors count from 1.
std::string mark_text(const std::string& file, const YAML::Mark& mark) {
    if (mark.is_null()) return file;
    return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// `origin` is the file name (each value gets its own line:col) or, for a
// --set, the whole assignment, which is then every value's location.
value convert(const YAML::Node& node, const std::string& origin, bool from_set, const std::string& path) {
    value v;
    v.from_set = from_set;
    v.where = from_set ? origin : mark_text(origin, node.Mark());
    if (node.IsScalar()) {
        v.type = kind::scalar;
        v.scalar = node.Scalar();
    } else if (node.IsSequence()) {
        v.type = kind::sequence;
        for (const auto& item : node) v.items.push_back(convert(item, origin, from_set, join_path(path, v.items.size())));
    } else if (node.IsMap()) {
        v.type = kind::map;
        for (const auto& pair : node) {
            const auto key_where = from_set ? origin : mark_text(origin, pair.first.Mark());
            if (!pair.first.IsScalar()) throw_at(key_where, path, "expected a plain key, found a " + std::string(pair.first.IsMap() ? "map" : "list"));
            const auto& key = pair.first.Scalar();
            const auto child_path = join_path(path, key);
            for (const auto& e : v.entries)
                if (e.key == key) throw_at(key_where, child_path, "duplicate key (first at " + e.where + ")");
            v.entries.push_back({key, key_where, convert(pair.second, origin, from_set, child_path)});
        }
    }
    return v;
}

struct located {
    const value* node;   // null when absent
    std::string where;   // of the node, or of its nearest present ancestor
    bool from_set;
    // Set when the path runs into a scalar (or a map where a list is needed):
    // the message for the ancestor that cannot hold the rest of the path.
    std::optional<std::string> blocked;
};

located locate(const config_tree& tree, const std::string& path) {
    located at{&tree.root, tree.root.where, tree.root.from_set, std::nullopt};
    std::string walked;
    for (const auto& seg : split_path(path)) {
        const value* next = nullptr;
        std::string where;
        const auto* key = std::get_if<std::string>(&seg);
        const auto needed = key ? kind::map : kind::sequence;
        if (at.node->type != needed && at.node->type != kind::null) {
            at.blocked = walked.empty() ? std::string() : walked + ": ";
            *at.blocked += std::string("expected a ") + (key ? "map" : "list") + ", found " + describe(at.node);
            at.node = nullptr;
            return at;
        }
        if (key) {
            walked = join_path(walked, *key);
            for (const auto& e : at.node->entries)
                if (e.key == *key) {
                    next = &e.val;
                    // A scalar is pointed at itself; a section at its "key:" line.
                    where = e.val.type == kind::scalar ? e.val.where : e.where;
                }
        } else {
            const auto index = std::get<std::size_t>(seg);
            walked = join_path(walked, index);
            if (index < at.node->items.size()) {
                next = &at.node->items[index];
                where = next->where;
            }
        }
        if (next == nullptr) return {nullptr, at.where, at.from_set, std::nullopt};
        at = {next, std::move(where), next->from_set, std::nullopt};
    }
    return at;
}

// Locates `path` for reading, refusing a path that runs through a scalar
// ("server: 5" then server.threads) rather than treating it as absent.
located locate_readable(const config_tree& tree, const std::string& path) {
    auto at = locate(tree, path);
    if (at.blocked) throw config_error(at.where + ": " + *at.blocked);
    return at;
}

value make_value(kind type, std::string where = {}, bool from_set = false) {
    value v;
    v.type = type;
    v.where = std::move(where);
    v.from_set = from_set;
    return v;
}

value& make_child(value& v, const segment& seg) {
    if (const auto* key = std::get_if<std::string>(&seg)) {
        if (v.type != kind::map) v = make_value(kind::map);
        for (auto& e : v.entries)
            if (e.key == *key) return e.val;
        v.entries.push_back({*key, {}, {}});
        return v.entries.back().val;
    }
    const auto index = std::get<std::size_t>(seg);
    if (v.type != kind::sequence) v = make_value(kind::sequence);
    if (v.items.size() <= index) v.items.resize(index + 1);
    return v.items[index];
}

void record(config_tree& tree, const std::string& path, value v) {
    value* at = &tree.effective;
    for (const auto& seg : split_path(path)) at = &make_child(*at, seg);
    *at = std::move(v);
}

value scalar_value(std::string text, bool is_string) {
    value v = make_value(kind::scalar);
    v.scalar = std::move(text);
    v.is_string = is_string;
    return v;
}

value string_list_value(const std::vector<std::string>& list) {
    value v = make_value(kind::sequence);
    for (const auto& s : list) v.items.push_back(scalar_value(s, true));
    return v;
}

// The common shape of every scalar getter: absent → `def`; present → `parse`
// of its text, or an error saying what was expected and what was found. Both
// outcomes are recorded (via `format`) in the effective configuration.
template <class T, class Parse, class Format>
T get_scalar(config_tree& tree, const std::string& parent, std::string_view key, const T& def,
             const std::string& expected, Parse parse, Format format) {
    const auto path = join_path(parent, key);
    const auto at = locate_readable(tree, path);
    if (!at.node) {
        record(tree, path, format(def));
        return def;
    }
    std::optional<T> result;
    if (at.node->type == kind::scalar) result = parse(at.node->scalar);
    if (!result) throw_at(at.where, path, "expected " + expected + ", found " + describe(at.node));
    record(tree, path, format(*result));
    return *result;
}

std::string range_text(const char* what, std::string min, std::string max, bool has_min, bool has_max) {
    if (has_min && has_max) return std::string(what) + " in " + min + ".." + max;
    if (has_min) return std::string(what) + " >= " + min;
    if (has_max) return std::string(what) + " <= " + max;
    return what;
}

bool reads_as_other_type(const std::string& text) {
    return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL" ||
           config_detail::parse_boolean(text) || config_detail::parse_number(text);
}

void emit(YAML::Emitter& out, const value& v) {
    switch (v.type) {
    case kind::null: out << YAML::Null; break;
    case kind::scalar:
        if (v.is_string && reads_as_other_type(v.scalar)) out << YAML::DoubleQuoted;
        out << v.scalar;
        break;
    case kind::sequence:
        out << YAML::BeginSeq;
        for (const auto& item : v.items) emit(out, item);
        out << YAML::EndSeq;
        break;
    case kind::map:
        out << YAML::BeginMap;
        for (const auto& e : v.entries) {
            out << YAML::Key << e.key << YAML::Value;
            emit(out, e.val);
        }
        out << YAML::EndMap;
        break;
    }
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return text;
}

// A --set value is YAML ("[a, b]", "4", "{k: v}"); text that is not, or a flow
// collection that does not span the whole value ("[::1]:9000" would parse as
// the list [::1]), is taken as a plain string.
value parse_set_value(std::string_view text, const std::string& label, const std::string& path) {
    const auto t = trim(text);
    try {
        const auto node = YAML::Load(std::string(text));
        const bool flow = !t.empty() && (t.front() == '[' || t.front() == '{');
        if (!flow || t.back() == (t.front() == '[' ? ']' : '}')) return convert(node, label, true, path);
    } catch (const YAML::Exception&) {
    }
    value v = scalar_value(std::string(t), true);
    v.where = label;
    v.from_set = true;
    return v;
}

std::shared_ptr<config_tree> parse_document(const std::string& text, const std::string& name, std::string base_dir) {
    YAML::Node node;
    try {
        node = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        const bool located = !e.mark.is_null();
        throw config_error(config_detail::explain_yaml_error(text, name, e.msg, located ? e.mark.line : -1,
                                                             located ? e.mark.column : -1));
    }
    auto tree = std::make_shared<config_tree>();
    tree->file_name = name;
    tree->base_dir = std::move(base_dir);
    tree->root = convert(node, name, false, "");
    if (tree->root.type == kind::null) tree->root.where = name + ":1:1";
    if (tree->root.type != kind::map && tree->root.type != kind::null)
        throw_at(tree->root.where, "", "expected a map of sections (server:, frontend:, ...), found " + describe(&tree->root));
    return tree;
}

}  // namespace

// --- config_node ---

config_node::config_node(std::shared_ptr<config_tree> tree, std::string path)
    : tree_(std::move(tree)), path_(std::move(path)) {}
config_node::config_node(const config_node&) = default;
config_node& config_node::operator=(const config_node&) = default;
config_node::~config_node() = default;

const std::string& config_node::path() const { return path_; }
std::string config_node::where() const { return locate(*tree_, path_).where; }
bool config_node::present() const { return locate(*tree_, path_).node != nullptr; }

std::string config_node::base_dir() const {
    if (locate(*tree_, path_).from_set) return std::filesystem::current_path().string();
    return tree_->base_dir;
}

bool config_node::is_map() const {
    const auto at = locate(*tree_, path_);
    return at.node && at.node->type == kind::map;
}
bool config_node::is_sequence() const {
    const auto at = locate(*tree_, path_);
    return at.node && at.node->type == kind::sequence;
}
bool config_node::is_scalar() const {
    const auto at = locate(*tree_, path_);
    return at.node && at.node->type == kind::scalar;
}

bool config_node::has(std::string_view key) const { return child(key).present(); }
config_node config_node::child(std::string_view key) const { return {tree_, join_path(path_, key)}; }

std::vector<config_node> config_node::items() const {
    const auto at = locate_readable(*tree_, path_);
    if (!at.node || at.node->type == kind::null) return {};
    if (at.node->type != kind::sequence) throw_at(at.where, path_, "expected a list, found " + describe(at.node));
    std::vector<config_node> out;
    for (std::size_t i = 0; i < at.node->items.size(); ++i) out.emplace_back(tree_, join_path(path_, i));
    return out;
}

std::vector<std::string> config_node::keys() const {
    const auto at = locate_readable(*tree_, path_);
    if (!at.node || at.node->type == kind::null) return {};
    if (at.node->type != kind::map) throw_at(at.where, path_, "expected a map, found " + describe(at.node));
    std::vector<std::string> out;
    for (const auto& e : at.node->entries) out.push_back(e.key);
    return out;
}

std::string config_node::string(std::string_view key, std::string_view def) const {
    return get_scalar<std::string>(
        *tree_, path_, key, std::string(def), "a string", [](const std::string& s) { return std::optional(s); },
        [](const std::string& s) { return scalar_value(s, true); });
}

std::optional<std::string> config_node::optional_string(std::string_view key) const {
    if (!locate_readable(*tree_, join_path(path_, key)).node) return std::nullopt;
    return string(key, "");
}

std::int64_t config_node::integer(std::string_view key, std::int64_t def, std::int64_t min, std::int64_t max) const {
    using limits = std::numeric_limits<std::int64_t>;
    const auto expected = range_text("an integer", std::to_string(min), std::to_string(max), min != limits::min(),
                                     max != limits::max());
    return get_scalar<std::int64_t>(
        *tree_, path_, key, def, expected,
        [&](const std::string& s) {
            const auto v = config_detail::parse_integer(s);
            return v && *v >= min && *v <= max ? v : std::nullopt;
        },
        [](std::int64_t v) { return scalar_value(std::to_string(v), false); });
}

bool config_node::boolean(std::string_view key, bool def) const {
    return get_scalar<bool>(
        *tree_, path_, key, def, "a boolean (true/false, yes/no, on/off)", config_detail::parse_boolean,
        [](bool v) { return scalar_value(v ? "true" : "false", false); });
}

double config_node::number(std::string_view key, double def, double min, double max) const {
    using limits = std::numeric_limits<double>;
    const auto expected = range_text("a number", config_detail::format_number(min), config_detail::format_number(max),
                                     min > limits::lowest(), max < limits::max());
    return get_scalar<double>(
        *tree_, path_, key, def, expected,
        [&](const std::string& s) {
            const auto v = config_detail::parse_number(s);
            return v && *v >= min && *v <= max ? v : std::nullopt;
        },
        [](double v) { return scalar_value(config_detail::format_number(v), false); });
}

std::chrono::nanoseconds config_node::duration(std::string_view key, std::chrono::nanoseconds def) const {
    return get_scalar<std::chrono::nanoseconds>(
        *tree_, path_, key, def, "a duration (e.g. 30s, 250ms, 2m, 10us, 1h; a bare number is seconds)",
        config_detail::parse_duration,
        [](std::chrono::nanoseconds v) { return scalar_value(config_detail::format_duration(v), false); });
}

std::uint64_t config_node::byte_size(std::string_view key, std::uint64_t def, std::uint64_t max) const {
    std::string expected = "a size (e.g. 512, 64k, 1m, 2g)";
    if (max != std::numeric_limits<std::uint64_t>::max())
        expected += " up to " + config_detail::format_byte_size(max) + " bytes";
    return get_scalar<std::uint64_t>(
        *tree_, path_, key, def, expected,
        [&](const std::string& s) {
            const auto v = config_detail::parse_byte_size(s);
            return v && *v <= max ? v : std::nullopt;
        },
        [](std::uint64_t v) { return scalar_value(config_detail::format_byte_size(v), false); });
}

std::vector<std::string> config_node::string_list(std::string_view key, const std::vector<std::string>& def) const {
    const auto path = join_path(path_, key);
    const auto at = locate_readable(*tree_, path);
    std::vector<std::string> out;
    if (!at.node) {
        out = def;
    } else if (at.node->type == kind::scalar) {
        out.push_back(at.node->scalar);
    } else if (at.node->type == kind::sequence) {
        for (std::size_t i = 0; i < at.node->items.size(); ++i) {
            const auto& item = at.node->items[i];
            if (item.type != kind::scalar)
                throw_at(item.where, join_path(path, i), "expected a string, found " + describe(&item));
            out.push_back(item.scalar);
        }
    } else {
        throw_at(at.where, path, "expected a string or a list of strings, found " + describe(at.node));
    }
    record(*tree_, path, string_list_value(out));
    return out;
}

std::string config_node::one_of(std::string_view key, std::string_view def,
                                std::initializer_list<std::string_view> allowed) const {
    auto result = string(key, def);
    std::vector<std::string> names(allowed.begin(), allowed.end());
    if (std::find(names.begin(), names.end(), result) != names.end()) return result;
    std::string message = "expected one of ";
    for (std::size_t i = 0; i < names.size(); ++i) message += (i ? ", " : "") + names[i];
    message += ", found '" + result + "'";
    if (const auto hint = nearest_key(result, names)) message += " (did you mean '" + *hint + "'?)";
    fail(key, message);
}

void config_node::set_effective(std::string_view key, std::string_view value) const {
    record(*tree_, join_path(path_, key), scalar_value(std::string(value), true));
}

void config_node::set_effective(std::string_view key, const std::vector<std::string>& values) const {
    record(*tree_, join_path(path_, key), string_list_value(values));
}

void config_node::set_effective_boolean(std::string_view key, bool value) const {
    record(*tree_, join_path(path_, key), scalar_value(value ? "true" : "false", false));
}

std::string config_node::as_string() const {
    const auto at = locate_readable(*tree_, path_);
    if (!at.node || at.node->type != kind::scalar) throw_at(at.where, path_, "expected a string, found " + describe(at.node));
    record(*tree_, path_, scalar_value(at.node->scalar, true));
    return at.node->scalar;
}

void config_node::allow_keys(std::initializer_list<std::string_view> known) const {
    allow_keys(std::vector<std::string>(known.begin(), known.end()));
}

void config_node::allow_keys(const std::vector<std::string>& known) const {
    const auto at = locate_readable(*tree_, path_);
    if (!at.node || at.node->type == kind::null) return;
    if (at.node->type != kind::map) throw_at(at.where, path_, "expected a map, found " + describe(at.node));
    std::vector<std::string> unknown;
    for (const auto& e : at.node->entries) {
        if (std::find(known.begin(), known.end(), e.key) != known.end()) continue;
        std::string message = "unknown key '" + e.key + "'";
        if (const auto hint = nearest_key(e.key, known)) {
            message += " (did you mean '" + *hint + "'?)";
        } else if (known.empty()) {
            message += " (this section takes no keys)";
        } else {
            message += " (known keys: ";
            for (std::size_t i = 0; i < known.size(); ++i) message += (i ? ", " : "") + known[i];
            message += ")";
        }
        // Every unknown key of the section at once: a user fixes them in one go.
        unknown.push_back(e.where + ": " + join_path(path_, e.key) + ": " + message);
    }
    if (!unknown.empty()) throw config_error(std::move(unknown));
}

void config_node::fail(std::string_view key, std::string_view message) const {
    const auto path = key.empty() ? path_ : join_path(path_, key);
    throw_at(locate(*tree_, path).where, path, message);
}

// --- config_document ---

config_document config_document::load(const std::string& file) {
    if (file.empty()) return from_string("", "(command line)");
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(file, ec)) throw config_error(file + ": cannot read: is a directory");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw config_error(file + ": cannot read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    config_document doc;
    doc.tree_ = parse_document(text.str(), file, fs::absolute(file).parent_path().lexically_normal().string());
    return doc;
}

config_document config_document::from_string(std::string_view yaml, std::string_view name) {
    config_document doc;
    doc.tree_ = parse_document(std::string(yaml), std::string(name), std::filesystem::current_path().string());
    return doc;
}

void config_document::set(std::string_view assignment) {
    const std::string label = "--set " + std::string(assignment);
    const auto eq = assignment.find('=');
    const auto key = trim(assignment.substr(0, eq));
    std::vector<segment> segments;
    try {
        segments = split_path(key);
    } catch (const std::invalid_argument&) {
    }
    if (eq == std::string_view::npos || segments.empty())
        throw config_error(label + ": expected key.path=value (e.g. --set server.threads=4)");

    const auto fresh = [&](kind type) { return make_value(type, label, true); };
    value* at = &tree_->root;
    std::string path;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const bool last = i + 1 == segments.size();
        if (const auto* name = std::get_if<std::string>(&segments[i])) {
            if (at->type == kind::null) at->type = kind::map;
            if (at->type != kind::map)
                throw_at(label, path, "expected a map to hold key '" + *name + "', found " + describe(at));
            path = join_path(path, *name);
            auto it = std::find_if(at->entries.begin(), at->entries.end(), [&](const entry& e) { return e.key == *name; });
            if (it == at->entries.end()) it = at->entries.insert(it, entry{*name, label, fresh(kind::null)});
            if (last) {
                it->where = label;
                it->val = parse_set_value(assignment.substr(eq + 1), label, path);
            }
            at = &it->val;
        } else {
            const auto index = std::get<std::size_t>(segments[i]);
            if (at->type != kind::sequence)
                throw_at(label, path, "expected a list to hold index " + std::to_string(index) + ", found " + describe(at));
            if (index > at->items.size())
                throw_at(label, path, "index " + std::to_string(index) + " is past the end of the list (" +
                                          std::to_string(at->items.size()) + " items)");
            if (index == at->items.size()) at->items.push_back(fresh(kind::null));
            path = join_path(path, index);
            if (last) at->items[index] = parse_set_value(assignment.substr(eq + 1), label, path);
            at = &at->items[index];
        }
    }
}

config_node config_document::root() const { return {tree_, ""}; }

std::string config_document::effective_yaml() const {
    if (tree_->effective.type == kind::null) return "{}\n";
    YAML::Emitter out;
    emit(out, tree_->effective);
    return std::string(out.c_str()) + "\n";
}

const std::string& config_document::file_name() const { return tree_->file_name; }

std::vector<std::string> config_document::unread_sections() const {
    std::vector<std::string> out;
    if (tree_->root.type != kind::map) return out;
    for (const auto& e : tree_->root.entries) {
        bool read = false;
        if (tree_->effective.type == kind::map)
            for (const auto& r : tree_->effective.entries) read = read || r.key == e.key;
        if (!read) out.push_back(e.key);
    }
    return out;
}

}  // namespace m0
