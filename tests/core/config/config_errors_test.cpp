// config_errors: every error of independent checks in one run, in YAML order,
// each once; config_error holding one error or several.
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

#include "config_test_support.hpp"

using m0::config_error;
using m0::config_errors;
using m0::test::error_of;
using m0::test::temp_yaml;

namespace {

std::vector<std::string> errors_of(const config_errors& errors) {
    try {
        errors.throw_if_any();
    } catch (const config_error& e) {
        return e.errors();
    }
    return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(config_errors_suite)

BOOST_AUTO_TEST_CASE(every_failing_check_is_kept_and_reported_in_yaml_order) {
    temp_yaml file("s:\n  count: four\n  name: ok\n  flag: maybe\n  colour: blue\n");
    const auto doc = file.load();
    const auto s = doc.root().child("s");
    config_errors errors;
    // Checked in another order than the file's: the report follows the file.
    BOOST_TEST(!errors.check([&] { (void)s.boolean("flag", false); }));
    BOOST_TEST(errors.check([&] { (void)s.string("name", ""); }));
    BOOST_TEST(!errors.check([&] { (void)s.integer("count", 1, 1, 8); }));
    BOOST_TEST(!errors.check([&] { s.allow_keys({"count", "name", "flag"}); }));
    BOOST_TEST(errors.size() == 3u);
    const auto all = errors_of(errors);
    BOOST_TEST_REQUIRE(all.size() == 3u);
    BOOST_TEST(all[0] == file.path() + ":2:10: s.count: expected an integer in 1..8, found 'four'");
    BOOST_TEST(all[1] == file.path() + ":4:9: s.flag: expected a boolean (true/false, yes/no, on/off), found 'maybe'");
    BOOST_TEST(all[2].rfind(file.path() + ":5:3: s.colour: unknown key 'colour'", 0) == 0, all[2]);
    // what() is the same errors, one a line.
    const auto what = error_of([&] { errors.throw_if_any(); });
    BOOST_TEST(what == all[0] + "\n" + all[1] + "\n" + all[2]);
}

BOOST_AUTO_TEST_CASE(no_error_throws_nothing) {
    config_errors errors;
    BOOST_TEST(errors.check([] {}));
    BOOST_TEST(errors.empty());
    BOOST_CHECK_NO_THROW(errors.throw_if_any());
}

BOOST_AUTO_TEST_CASE(an_error_reported_twice_is_kept_once) {
    // Two plugins reading one section (`python:`) both find its mistake.
    config_errors errors;
    errors.add(config_error("m0.yaml:3:9: python.venv: not a virtual environment"));
    errors.add(config_error(std::vector<std::string>{"m0.yaml:1:1: a: bad", "m0.yaml:3:9: python.venv: not a virtual environment"}));
    BOOST_TEST(errors.size() == 2u);
}

BOOST_AUTO_TEST_CASE(errors_without_a_position_follow_in_the_order_they_came) {
    config_errors errors;
    errors.add(config_error("cannot load application 'app:x': no module 'app'"));
    // A --set names its assignment; a value such as an address is no position.
    errors.add(config_error("--set server.listen=10.0.0.1:80:90: server.listen: bad"));
    errors.add(config_error("m0.yaml:7:3: log.level: expected one of debug, info"));
    errors.add(config_error("m0.yaml:2:12: server.threads: expected an integer"));
    const auto all = errors_of(errors);
    BOOST_TEST_REQUIRE(all.size() == 4u);
    BOOST_TEST(all[0] == "m0.yaml:2:12: server.threads: expected an integer");
    BOOST_TEST(all[1] == "m0.yaml:7:3: log.level: expected one of debug, info");
    BOOST_TEST(all[2] == "cannot load application 'app:x': no module 'app'");
    BOOST_TEST(all[3] == "--set server.listen=10.0.0.1:80:90: server.listen: bad");
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_one_error_each) {
    temp_yaml file("s:\n  colour: blue\n  size: 3\n  name: x\n");
    const auto doc = file.load();
    try {
        doc.root().child("s").allow_keys({"name"});
        BOOST_FAIL("expected a config_error");
    } catch (const config_error& e) {
        BOOST_TEST_REQUIRE(e.errors().size() == 2u);
        BOOST_TEST(e.errors()[0].rfind(file.path() + ":2:3: s.colour:", 0) == 0, e.errors()[0]);
        BOOST_TEST(e.errors()[1].rfind(file.path() + ":3:3: s.size:", 0) == 0, e.errors()[1]);
    }
}

BOOST_AUTO_TEST_CASE(one_error_is_its_own_list) {
    const config_error e("m0.yaml:1:1: a: bad");
    BOOST_TEST_REQUIRE(e.errors().size() == 1u);
    BOOST_TEST(e.errors()[0] == std::string(e.what()));
}

BOOST_AUTO_TEST_SUITE_END()
