#include "plugin/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <m0/version.hpp>

namespace m0 {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view file_prefix = "m0-";
constexpr std::string_view file_suffix = ".so";

// Bytes a descriptor must have for the fields its ABI minor promises. Minor 0
// ends with make_executor, minor 1 with make_module, minor 2 with
// make_scheduler; a later minor that appends fields adds a case.
std::size_t required_size(std::uint16_t abi_minor) {
    if (abi_minor == 0) return offsetof(plugin_descriptor, make_executor) + sizeof(plugin_descriptor::make_executor);
    if (abi_minor == 1) return offsetof(plugin_descriptor, make_module) + sizeof(plugin_descriptor::make_module);
    return offsetof(plugin_descriptor, make_scheduler) + sizeof(plugin_descriptor::make_scheduler);
}

constexpr plugin_kind all_kinds[] = {plugin_kind::frontend, plugin_kind::executor, plugin_kind::module,
                                     plugin_kind::scheduler};

[[noreturn]] void refuse(const std::string& path, std::string_view field, const std::string& expected,
                         const std::string& found, std::string_view hint) {
    std::string msg = "plugin " + path + " refused: field " + std::string(field) + ": expected " +
                      expected + ", found " + found;
    if (!hint.empty()) msg += " (" + std::string(hint) + ")";
    throw plugin_error(msg);
}

std::string hex(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", v);
    return buf;
}

std::string quoted(std::string_view s) {
    std::string out(1, '"');  // appended piecewise: "\"" + s + "\"" trips GCC 12's -Wrestrict
    out += s;
    out += '"';
    return out;
}

std::string quoted(const char* s) { return s ? quoted(std::string_view(s)) : "null"; }

std::string kind_text(plugin_kind k) {
    if (k == plugin_kind::frontend || k == plugin_kind::executor || k == plugin_kind::module ||
        k == plugin_kind::scheduler)
        return to_string(k);
    return std::to_string(static_cast<std::uint32_t>(k));
}

std::string name_key(plugin_kind k, std::string_view name) {
    return kind_text(k) + "/" + std::string(name);
}

// Checks every field, in layout order: magic, ABI and size first, because
// until they match nothing else in the struct can be trusted to be where we
// expect it.
void validate(const std::string& path, const plugin_descriptor& d) {
    if (d.magic != plugin_magic)
        refuse(path, "magic", hex(plugin_magic), hex(d.magic), "not an m0 plugin descriptor");
    if (d.abi_major != plugin_abi_major)
        refuse(path, "abi_major", std::to_string(plugin_abi_major), std::to_string(d.abi_major),
               "built for an incompatible m0 SDK");
    if (d.abi_minor > plugin_abi_minor)
        refuse(path, "abi_minor", "at most " + std::to_string(plugin_abi_minor), std::to_string(d.abi_minor),
               "built for a newer m0 SDK; upgrade m0 or rebuild the plugin");
    if (d.struct_size < required_size(d.abi_minor))
        refuse(path, "struct_size", "at least " + std::to_string(required_size(d.abi_minor)),
               std::to_string(d.struct_size), "descriptor truncated for its ABI version");
    if (!d.build_signature || std::string_view(d.build_signature) != M0_BUILD_SIGNATURE)
        refuse(path, "build_signature", quoted(M0_BUILD_SIGNATURE), quoted(d.build_signature),
               "rebuild the plugin with the compiler, standard library, Boost and m0 of this m0");
    if (!d.name || !*d.name) refuse(path, "name", "a non-empty name", quoted(d.name), "");
    switch (d.kind) {
        case plugin_kind::frontend:
            if (!d.make_frontend) refuse(path, "make_frontend", "a factory", "null", "frontend plugin");
            break;
        case plugin_kind::executor:
            if (!d.make_executor) refuse(path, "make_executor", "a factory", "null", "executor plugin");
            break;
        case plugin_kind::module:
            // A minor-0 descriptor has no make_module field to read.
            if (d.abi_minor < 1)
                refuse(path, "abi_minor", "at least 1 for a module plugin", std::to_string(d.abi_minor), "");
            if (!d.make_module) refuse(path, "make_module", "a factory", "null", "module plugin");
            break;
        case plugin_kind::scheduler:
            // Descriptors before minor 2 have no make_scheduler field to read.
            if (d.abi_minor < 2)
                refuse(path, "abi_minor", "at least 2 for a scheduler plugin", std::to_string(d.abi_minor), "");
            if (!d.make_scheduler) refuse(path, "make_scheduler", "a factory", "null", "scheduler plugin");
            break;
        default:
            refuse(path, "kind", "frontend, executor, module or scheduler", kind_text(d.kind), "");
    }
}

bool is_plugin_file_name(const std::string& n) {
    return n.size() > file_prefix.size() + file_suffix.size() && n.starts_with(file_prefix) &&
           n.ends_with(file_suffix);
}

// m0-<kind>-<name>.so is what load(kind, name) looks for, so a file named
// that way must hold that plugin; otherwise `frontend.type: x` could load a
// plugin that is not x, and `m0 plugins` would list names nobody can load.
// Files named otherwise (load_file of any path) are not checked.
void check_file_name(const std::string& path, const plugin_descriptor& d) {
    const std::string file = fs::path(path).filename().string();
    if (!is_plugin_file_name(file)) return;
    std::string_view stem(file);
    stem = stem.substr(file_prefix.size(), stem.size() - file_prefix.size() - file_suffix.size());
    for (plugin_kind k : all_kinds) {
        const std::string kind_dash = kind_text(k) + "-";
        if (!stem.starts_with(kind_dash)) continue;
        const std::string_view name = stem.substr(kind_dash.size());
        if (d.kind != k)
            refuse(path, "kind", kind_text(k), kind_text(d.kind), "the file name says " + kind_text(k));
        if (name != d.name)
            refuse(path, "name", quoted(name), quoted(d.name), "the file name says " + quoted(name));
    }
}

bool valid_name(std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_';
    });
}

// Absolute, without "." or ".." steps; symlinks kept, so messages show the
// path the user configured.
std::string absolute_path(const std::string& path) {
    std::error_code ec;
    fs::path abs = fs::absolute(path, ec);
    return ec ? path : abs.lexically_normal().string();
}

std::string canonical_or_same(const std::string& path) {
    std::error_code ec;
    fs::path c = fs::canonical(path, ec);
    return ec ? path : c.string();
}

}  // namespace

plugin_loader::plugin_loader(std::vector<std::string> search_dirs) : search_dirs_(std::move(search_dirs)) {}

std::vector<std::string> plugin_loader::default_search_dirs(const std::vector<std::string>& configured) {
    std::vector<std::string> dirs = configured;
    if (const char* env = std::getenv("M0_PLUGIN_PATH")) {
        std::string_view rest = env;
        while (!rest.empty()) {
            auto colon = rest.find(':');
            std::string_view part = rest.substr(0, colon);
            if (!part.empty()) dirs.push_back(absolute_path(std::string(part)));
            rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
        }
    }
    // Next to libm0core (lib/m0/plugins beside lib/libm0core.so): the build
    // tree and an install keep them there, and so does a wheel, where the
    // running executable is the user's Python (its venv's bin/../lib/m0 is
    // nothing of m0's, so it is not searched).
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&plugin_loader::default_search_dirs), &self) && self.dli_fname) {
        fs::path lib = fs::path(absolute_path(self.dli_fname));
        dirs.push_back((lib.parent_path() / "m0" / "plugins").lexically_normal().string());
        return dirs;
    }
    // Where the core cannot be located: <executable>/../lib/m0/plugins.
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) dirs.push_back((exe.parent_path() / ".." / "lib" / "m0" / "plugins").lexically_normal().string());
    return dirs;
}

const std::vector<std::string>& plugin_loader::search_dirs() const { return search_dirs_; }

const loaded_plugin& plugin_loader::load(plugin_kind kind, std::string_view name) {
    if (!valid_name(name))
        throw plugin_error("invalid " + kind_text(kind) + " plugin name '" + std::string(name) +
                           "': expected letters, digits, '-' or '_'");
    const std::string file = std::string(file_prefix) + kind_text(kind) + "-" + std::string(name) +
                             std::string(file_suffix);
    std::vector<std::string> tried;
    for (const auto& dir : search_dirs_) {
        std::string candidate = (fs::path(dir) / file).string();
        std::error_code ec;
        if (!fs::is_regular_file(candidate, ec)) {
            tried.push_back(candidate);
            continue;
        }
        // The first hit decides: a broken plugin is reported, not silently
        // shadowed by another copy further down the path.
        return load_file(candidate);
    }
    std::string msg = "no " + kind_text(kind) + " plugin '" + std::string(name) + "': " + file +
                      " not found; searched:";
    if (tried.empty()) msg += " (no search directories)";
    for (const auto& t : tried) msg += "\n  " + t;
    throw plugin_not_found(msg);
}

const loaded_plugin& plugin_loader::load_file(const std::string& given) {
    // dlopen searches the library path for a name without '/'; a plugin file
    // is always taken literally.
    const std::string path = absolute_path(given);
    const std::string key = canonical_or_same(path);
    if (auto it = by_file_.find(key); it != by_file_.end()) return *it->second;

    // Never dlclose'd: a refused plugin may have run constructors, and a
    // loaded one's code is referenced until exit.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = dlerror();
        throw plugin_error("plugin " + path + " refused: dlopen failed: " + (err ? err : "unknown error"));
    }
    dlerror();
    void* sym = dlsym(handle, plugin_symbol_name);
    if (!sym) {
        const char* err = dlerror();
        throw plugin_error("plugin " + path + " refused: symbol " + plugin_symbol_name +
                           ": expected an exported plugin descriptor, found none (" +
                           (err ? err : "symbol is null") + ")");
    }
    const auto* d = static_cast<const plugin_descriptor*>(sym);
    validate(path, *d);
    check_file_name(path, *d);

    const std::string nkey = name_key(d->kind, d->name);
    if (auto it = by_name_.find(nkey); it != by_name_.end())
        refuse(path, "name", "a " + kind_text(d->kind) + " plugin name no other file provides",
               quoted(d->name) + ", already loaded from " + it->second->path, "remove one of the two files");

    const loaded_plugin& p = loaded_.emplace_back(loaded_plugin{d, path});
    by_file_.emplace(key, &p);
    by_name_.emplace(nkey, &p);
    return p;
}

std::vector<plugin_loader::listing> plugin_loader::list_all() {
    std::vector<listing> out;
    std::vector<std::string> seen;  // canonical paths: a dir listed twice is shown once
    for (const auto& dir : search_dirs_) {
        std::error_code ec;
        std::vector<std::string> files;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code fec;
            if (is_plugin_file_name(it->path().filename().string()) && it->is_regular_file(fec))
                files.push_back(absolute_path(it->path().string()));
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            std::string key = canonical_or_same(f);
            if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
            seen.push_back(key);
            try {
                const loaded_plugin& p = load_file(f);
                out.push_back({p.path, p.descriptor, {}});
            } catch (const plugin_error& e) {
                out.push_back({f, nullptr, e.what()});
            }
        }
    }
    return out;
}

std::vector<std::string> plugin_loader::names_found(plugin_kind kind) const {
    const std::string prefix = std::string(file_prefix) + kind_text(kind) + "-";
    std::vector<std::string> out;
    for (const auto& dir : search_dirs_) {
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string file = it->path().filename().string();
            if (!is_plugin_file_name(file) || !file.starts_with(prefix)) continue;
            out.push_back(file.substr(prefix.size(), file.size() - prefix.size() - file_suffix.size()));
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace m0
