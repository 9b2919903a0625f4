// The top-level `python:` section, read without starting the interpreter.
#define BOOST_TEST_MODULE python_settings
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <optional>
#include <string>

#include <m0/config.hpp>
#include <m0/python/interpreter.hpp>

#include "core/config/config_test_support.hpp"
#include "support/temp_dir.hpp"

using m0::python::interpreter_settings;

namespace {

// Sets VIRTUAL_ENV (or unsets it, for nullopt) for one test, then restores it.
class virtual_env_as {
public:
    explicit virtual_env_as(std::optional<std::string> value) {
        if (const char* v = std::getenv("VIRTUAL_ENV")) saved_ = v;
        if (value)
            ::setenv("VIRTUAL_ENV", value->c_str(), 1);
        else
            ::unsetenv("VIRTUAL_ENV");
    }
    ~virtual_env_as() {
        if (saved_)
            ::setenv("VIRTUAL_ENV", saved_->c_str(), 1);
        else
            ::unsetenv("VIRTUAL_ENV");
    }

private:
    std::optional<std::string> saved_;
};

interpreter_settings read(const m0::config_document& doc) { return m0::python::read_settings(doc.root()); }

}  // namespace

BOOST_AUTO_TEST_CASE(absent_section_takes_the_venv_from_the_environment) {
    virtual_env_as env("/opt/some-venv");
    auto s = read(m0::config_document::from_string("server: {threads: 1}\n", "test.yaml"));
    BOOST_TEST(s.venv == "/opt/some-venv");
    BOOST_TEST(s.path.empty());
    BOOST_TEST(s.chdir.empty());  // the frontend's key, not this section's
}

BOOST_AUTO_TEST_CASE(relative_venv_and_path_resolve_against_the_config_file) {
    virtual_env_as env(std::nullopt);
    m0::testing::temp_dir dir;
    dir.write("venv/pyvenv.cfg", "home = /usr/bin\n");
    dir.write("conf/m0.yaml", "python:\n  venv: ../venv\n  path: [src, /abs/lib]\n");
    auto s = read(m0::config_document::load((dir.path() / "conf/m0.yaml").string()));
    BOOST_TEST(std::filesystem::path(s.venv).lexically_normal() == (dir.path() / "venv").lexically_normal());
    BOOST_REQUIRE(s.path.size() == 2u);
    BOOST_TEST(std::filesystem::path(s.path[0]).lexically_normal() == (dir.path() / "conf/src").lexically_normal());
    BOOST_TEST(s.path[1] == "/abs/lib");
}

BOOST_AUTO_TEST_CASE(a_venv_without_pyvenv_cfg_is_refused_at_its_key) {
    virtual_env_as env(std::nullopt);
    m0::testing::temp_dir dir;
    dir.write("not-a-venv/readme", "");
    auto doc = m0::config_document::from_string("python:\n  venv: " + (dir.path() / "not-a-venv").string() + "\n",
                                                "test.yaml");
    auto e = m0::test::error_of([&] { read(doc); });
    BOOST_TEST(e.find("python.venv") != std::string::npos);
    BOOST_TEST(e.find("is not a virtual environment") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_keys_and_a_non_map_are_refused) {
    virtual_env_as env(std::nullopt);
    auto typo = m0::config_document::from_string("python:\n  venvv: x\n", "test.yaml");
    auto e = m0::test::error_of([&] { read(typo); });
    BOOST_TEST(e.find("venvv") != std::string::npos);
    BOOST_TEST(e.find("test.yaml:2") != std::string::npos);

    auto scalar = m0::config_document::from_string("python: yes\n", "test.yaml");
    BOOST_TEST(m0::test::error_of([&] { read(scalar); }).find("expected a map") != std::string::npos);
}
