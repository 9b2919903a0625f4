// Config parsing for static mounts, kept apart from the runtime: the root is
// checked to be a directory here, with the error located at its YAML node.
#include <m0/static_files/static_config.hpp>

#include <filesystem>
#include <system_error>

#include <m0/config.hpp>

namespace m0::static_files {
namespace {

static_mount_config parse_mount(const config_node& node) {
    if (!node.is_map()) node.fail("", "expected a map with `root` (and optionally `prefix`, `index`)");
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] { node.allow_keys({"prefix", "root", "index"}); });
    static_mount_config s;
    errors.check([&] {
        auto prefix = node.string("prefix", "/");
        if (prefix.empty() || prefix.front() != '/') node.fail("prefix", "expected a path starting with '/'");
        if (prefix.find_first_of("*?#% ") != std::string::npos)
            node.fail("prefix", "expected a plain path prefix (no '*', '?', '#', '%' or spaces)");
        if (prefix.back() != '/') prefix.push_back('/');
        s.prefix = std::move(prefix);
    });
    errors.check([&] {
        auto root = node.optional_string("root");
        if (!root || root->empty()) node.fail("root", "a static mount needs a `root` directory");
        std::filesystem::path p(*root);
        if (p.is_relative()) p = std::filesystem::path(node.base_dir()) / p;
        std::error_code ec;
        auto canonical = std::filesystem::weakly_canonical(p, ec);
        if (ec || !std::filesystem::is_directory(canonical, ec))
            node.fail("root", "not a directory: " + p.lexically_normal().string());
        s.root = canonical.string();
        node.set_effective("root", s.root);  // --check prints a config valid from anywhere
    });
    errors.check([&] {
        s.index = node.string("index", "index.html");
        if (s.index.find('/') != std::string::npos || s.index == "." || s.index == "..")
            node.fail("index", "expected a file name (no '/')");
    });
    errors.throw_if_any();
    return s;
}

}  // namespace

std::vector<static_mount_config> parse_static_mounts(const config_node& section) {
    std::vector<static_mount_config> mounts;
    auto statics = section.child("static");
    if (!statics.present()) return mounts;
    if (statics.is_map()) {
        mounts.push_back(parse_mount(statics));
    } else if (statics.is_sequence()) {
        // Every mount's errors in one run.
        config_errors errors;
        for (const auto& item : statics.items()) {
            errors.check([&] {
                auto s = parse_mount(item);
                for (const auto& other : mounts) {
                    if (other.prefix == s.prefix) item.fail("prefix", "another static mount already uses " + s.prefix);
                }
                mounts.push_back(std::move(s));
            });
        }
        errors.throw_if_any();
    } else {
        section.fail("static", "expected a map {prefix, root, index} or a list of them");
    }
    return mounts;
}

}  // namespace m0::static_files
