#define BOOST_TEST_MODULE plugin_loader
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <unistd.h>

#include <m0/frontend.hpp>
#include <m0/module.hpp>
#include <m0/version.hpp>

#include "plugin/plugin_loader.hpp"

namespace fs = std::filesystem;
using m0::plugin_kind;
using m0::plugin_loader;

namespace {

const std::string dir = M0_TEST_PLUGIN_DIR;
const std::string dup_dir = M0_TEST_PLUGIN_DUP_DIR;  // holds another m0-frontend-good.so

std::string file(const std::string& stem) { return dir + "/m0-" + stem + ".so"; }

// The message of the plugin_error `fn` throws; fails the test if none.
std::string refusal(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const m0::plugin_error& e) {
        return e.what();
    }
    BOOST_FAIL("expected a plugin_error");
    return {};
}

void check_contains(const std::string& message, const std::vector<std::string>& parts) {
    for (const auto& part : parts)
        BOOST_CHECK_MESSAGE(message.find(part) != std::string::npos,
                            "'" << part << "' missing from: " << message);
}

// Loads the named frontend and checks the refusal names the file, the field,
// expected and found.
void check_refused(const std::string& name, const std::vector<std::string>& parts) {
    plugin_loader loader({dir});
    std::string msg = refusal([&] { loader.load(plugin_kind::frontend, name); });
    check_contains(msg, {"plugin " + file("frontend-" + name) + " refused"});
    check_contains(msg, parts);
}

struct temp_dir {
    fs::path path = fs::temp_directory_path() / ("m0-plugin-loader-test-" + std::to_string(::getpid()));
    temp_dir() { fs::create_directories(path); }
    ~temp_dir() { fs::remove_all(path); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(good_plugin_loads_and_its_factory_runs) {
    plugin_loader loader({dir});
    const auto& p = loader.load(plugin_kind::frontend, "good");
    BOOST_TEST(p.path == file("frontend-good"));
    BOOST_TEST(std::string(p.descriptor->name) == "good");
    BOOST_TEST(std::string(m0::to_string(p.descriptor->kind)) == "frontend");
    m0::plugin_context ctx;
    auto fe = p.descriptor->make_frontend(ctx);
    BOOST_REQUIRE(fe);
    BOOST_TEST(std::string(fe->default_executor()) == "from-test-plugin");
}

BOOST_AUTO_TEST_CASE(module_plugin_loads_by_kind_and_name) {
    plugin_loader loader({dir});
    const auto& p = loader.load(plugin_kind::module, "good");
    BOOST_TEST(p.path == file("module-good"));
    BOOST_TEST(std::string(m0::to_string(p.descriptor->kind)) == "module");
    m0::plugin_context ctx;
    BOOST_TEST(static_cast<bool>(p.descriptor->make_module(ctx)));
    // The frontend of the same name is another plugin: names are per kind.
    BOOST_TEST(std::string(loader.load(plugin_kind::frontend, "good").descriptor->name) == "good");
}

BOOST_AUTO_TEST_CASE(refuses_module_without_factory) {
    plugin_loader loader({dir});
    check_contains(refusal([&] { loader.load(plugin_kind::module, "nofactory"); }),
                   {file("module-nofactory"), "field make_module", "expected a factory", "found null"});
}

BOOST_AUTO_TEST_CASE(refuses_module_with_a_descriptor_too_old_for_modules) {
    plugin_loader loader({dir});
    check_contains(refusal([&] { loader.load(plugin_kind::module, "oldminor"); }),
                   {file("module-oldminor"), "field abi_minor", "at least 1 for a module plugin", "found 0"});
}

BOOST_AUTO_TEST_CASE(scheduler_plugin_loads_by_kind_and_name) {
    plugin_loader loader({dir});
    const auto& p = loader.load(plugin_kind::scheduler, "good");
    BOOST_TEST(p.path == file("scheduler-good"));
    BOOST_TEST(std::string(m0::to_string(p.descriptor->kind)) == "scheduler");
    BOOST_TEST(p.descriptor->make_scheduler != nullptr);
}

BOOST_AUTO_TEST_CASE(refuses_scheduler_with_a_descriptor_too_old_for_schedulers) {
    plugin_loader loader({dir});
    check_contains(refusal([&] { loader.load(plugin_kind::scheduler, "oldminor"); }),
                   {file("scheduler-oldminor"), "field abi_minor", "at least 2 for a scheduler plugin", "found 1"});
}

// A plugin built against the SDK of ABI minor 1 (its descriptor ends before
// make_scheduler) still loads: the loader never reads past what it promises.
BOOST_AUTO_TEST_CASE(a_plugin_of_the_previous_minor_still_loads) {
    plugin_loader loader({dir});
    const auto& p = loader.load(plugin_kind::frontend, "minorone");
    BOOST_TEST(p.descriptor->abi_minor == 1);
    BOOST_TEST(p.descriptor->struct_size == offsetof(m0::plugin_descriptor, make_scheduler));
    m0::plugin_context ctx;
    BOOST_TEST(static_cast<bool>(p.descriptor->make_frontend(ctx)));
}

BOOST_AUTO_TEST_CASE(same_file_loaded_twice_is_one_plugin_not_a_duplicate) {
    temp_dir tmp;
    fs::create_symlink(file("frontend-good"), tmp.path / "m0-frontend-good.so");
    plugin_loader loader({tmp.path.string()});
    const auto& direct = loader.load_file(file("frontend-good"));
    BOOST_TEST(&loader.load_file(file("frontend-good")) == &direct);
    BOOST_TEST(&loader.load(plugin_kind::frontend, "good") == &direct);
}

BOOST_AUTO_TEST_CASE(refuses_wrong_magic) {
    check_refused("badmagic", {"field magic", "expected 0x4d30504c", "found 0xdeadbeef"});
}

BOOST_AUTO_TEST_CASE(refuses_other_abi_major) {
    check_refused("badmajor", {"field abi_major", "expected " + std::to_string(m0::plugin_abi_major),
                               "found 99", "incompatible m0 SDK"});
}

BOOST_AUTO_TEST_CASE(refuses_newer_abi_minor) {
    check_refused("newminor", {"field abi_minor", "expected at most " + std::to_string(m0::plugin_abi_minor),
                               "found " + std::to_string(m0::plugin_abi_minor + 1)});
}

BOOST_AUTO_TEST_CASE(refuses_descriptor_smaller_than_its_abi_needs) {
    check_refused("short", {"field struct_size", "expected at least " + std::to_string(sizeof(m0::plugin_descriptor)),
                            "found 8"});
}

BOOST_AUTO_TEST_CASE(refuses_other_build_signature_showing_both) {
    check_refused("badsig", {"field build_signature", std::string("expected \"") + M0_BUILD_SIGNATURE + "\"",
                             "found \"clang-0.0/boost-1_0/m0-9.9.9\""});
}

BOOST_AUTO_TEST_CASE(refuses_file_without_descriptor_with_dlerror) {
    check_refused("nodesc", {"symbol m0_plugin_descriptor", "found none", "undefined symbol: m0_plugin_descriptor"});
}

BOOST_AUTO_TEST_CASE(refuses_file_dlopen_cannot_load_with_dlerror) {
    check_refused("unresolved", {"dlopen failed", "undefined symbol: m0_test_symbol_defined_nowhere"});
}

BOOST_AUTO_TEST_CASE(refuses_kind_mismatch) {
    check_refused("mismatch", {"field kind", "expected frontend", "found executor"});
}

BOOST_AUTO_TEST_CASE(refuses_name_other_than_the_file_name) {
    check_refused("misnamed", {"field name", "expected \"misnamed\"", "found \"other\""});
}

BOOST_AUTO_TEST_CASE(refuses_duplicate_name_naming_both_files) {
    plugin_loader loader({dir, dup_dir});
    loader.load(plugin_kind::frontend, "good");
    const std::string second = dup_dir + "/m0-frontend-good.so";
    std::string msg = refusal([&] { loader.load_file(second); });
    check_contains(msg, {"plugin " + second + " refused", "field name", "found \"good\"",
                         "already loaded from " + file("frontend-good")});
}

BOOST_AUTO_TEST_CASE(not_found_lists_every_path_searched) {
    const std::string missing_dir = dir + "/no-such-dir";
    plugin_loader loader({missing_dir, dir});
    std::string msg = refusal([&] { loader.load(plugin_kind::executor, "absent"); });
    check_contains(msg, {"no executor plugin 'absent'", missing_dir + "/m0-executor-absent.so",
                         dir + "/m0-executor-absent.so"});
}

BOOST_AUTO_TEST_CASE(refuses_a_name_that_is_not_a_plain_word) {
    plugin_loader loader({dir});
    check_contains(refusal([&] { loader.load(plugin_kind::frontend, "../frontend-good"); }),
                   {"invalid frontend plugin name '../frontend-good'"});
}

BOOST_AUTO_TEST_CASE(list_all_shows_every_file_loaded_or_refused) {
    plugin_loader loader({dir, dup_dir, dir});  // a dir given twice is listed once
    std::map<std::string, m0::plugin_loader::listing> by_path;
    for (auto& l : loader.list_all()) {
        BOOST_TEST(by_path.count(l.path) == 0u);
        by_path.emplace(l.path, l);
    }
    const std::map<std::string, std::string> expected = {
        {file("frontend-good"), ""},
        {dup_dir + "/m0-frontend-good.so", "already loaded from " + file("frontend-good")},
        {file("frontend-badmagic"), "field magic"},
        {file("frontend-badmajor"), "field abi_major"},
        {file("frontend-newminor"), "field abi_minor"},
        {file("frontend-short"), "field struct_size"},
        {file("frontend-badsig"), "field build_signature"},
        {file("frontend-nodesc"), "symbol m0_plugin_descriptor"},
        {file("frontend-unresolved"), "dlopen failed"},
        // Valid descriptors, but not the plugin their file name promises.
        {file("frontend-mismatch"), "field kind"},
        {file("frontend-misnamed"), "field name"},
        {file("module-good"), ""},
        {file("module-nofactory"), "field make_module"},
        {file("module-oldminor"), "field abi_minor"},
        {file("frontend-minorone"), ""},
        {file("scheduler-good"), ""},
        {file("scheduler-oldminor"), "field abi_minor"},
    };
    BOOST_TEST(by_path.size() == expected.size());
    for (const auto& [path, error] : expected) {
        BOOST_TEST_CONTEXT(path) {
            BOOST_REQUIRE(by_path.count(path) == 1u);
            const auto& l = by_path.at(path);
            if (error.empty()) {
                BOOST_TEST(l.error == "");
                BOOST_REQUIRE(l.descriptor != nullptr);
                BOOST_TEST((std::string(l.descriptor->name) == "good" || std::string(l.descriptor->name) == "minorone"));
            } else {
                BOOST_TEST(l.descriptor == nullptr);
                check_contains(l.error, {"plugin " + path + " refused", error});
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(default_search_dirs_order_config_then_env_then_beside_the_core) {
    ::setenv("M0_PLUGIN_PATH", "/env/a::env/b", 1);
    auto dirs = plugin_loader::default_search_dirs({"/configured"});
    ::unsetenv("M0_PLUGIN_PATH");
    BOOST_REQUIRE(dirs.size() == 4u);
    BOOST_TEST(dirs[0] == "/configured");
    BOOST_TEST(dirs[1] == "/env/a");
    BOOST_TEST(dirs[2] == (fs::current_path() / "env" / "b").string());  // made absolute
    // This test binary lives in <build>/tests, like m0 in <build>/bin, and
    // libm0core in <build>/lib: one directory, named once.
    const auto exe_dir = fs::canonical("/proc/self/exe").parent_path();
    BOOST_TEST(dirs[3] == (exe_dir.parent_path() / "lib" / "m0" / "plugins").string());

    BOOST_TEST(plugin_loader::default_search_dirs({}).size() == 1u);
}

BOOST_AUTO_TEST_CASE(kind_names) {
    BOOST_TEST(std::string(m0::to_string(plugin_kind::frontend)) == "frontend");
    BOOST_TEST(std::string(m0::to_string(plugin_kind::executor)) == "executor");
    BOOST_TEST(std::string(m0::to_string(plugin_kind::module)) == "module");
    BOOST_TEST(std::string(m0::to_string(plugin_kind::scheduler)) == "scheduler");
}
