// `executors:` and `mounts:`: what parses, and each refusal located at its
// YAML node with a suggestion where one is likely.
#include <boost/test/unit_test.hpp>

#include "config/server_config.hpp"
#include "config_test_support.hpp"

using m0::config_document;
using m0::parse_server_config;
using m0::test::error_of;

namespace {

m0::server_config parse_text(std::string_view text) {
    return parse_server_config(config_document::from_string(text, "inline.yaml").root());
}

std::string error_in(std::string_view text) {
    return error_of([&] { parse_text(text); });
}

std::string normalized(std::string_view prefix) {
    std::string why;
    return m0::normalize_mount_prefix(prefix, why).value_or("<refused: " + why + ">");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(mounts_config_suite)

BOOST_AUTO_TEST_CASE(named_executors_and_mounts_parse_in_file_order) {
    const auto config = parse_text(
        "executors:\n"
        "  app: {type: pool, pool: {threads: 4}}\n"
        "  fast: {type: inline}\n"
        "mounts:\n"
        "  - {prefix: /api/, frontend: {type: wsgi, app: 'a:app'}, executor: app}\n"
        "  - {prefix: /, frontend: {type: http}, executor: fast}\n"
        "  - {prefix: /static, frontend: {type: http}}\n");
    BOOST_TEST(config.executors.size() == 2u);
    BOOST_TEST(config.executors[0].name == "app");
    BOOST_TEST(config.executors[0].type == "pool");
    BOOST_TEST(config.executors[1].name == "fast");
    BOOST_TEST(config.executors[1].type == "inline");
    BOOST_TEST(config.mounts.size() == 3u);
    BOOST_TEST(config.mounts[0].prefix == "/api");
    BOOST_TEST(config.mounts[0].frontend_type == "wsgi");
    BOOST_TEST(config.mounts[0].executor == "app");
    BOOST_TEST(config.mounts[1].prefix == "");
    BOOST_TEST(config.mounts[1].index == 1u);
    BOOST_TEST(config.mounts[2].executor == "");
    BOOST_TEST(config.frontend_type == "");
}

BOOST_AUTO_TEST_CASE(the_executor_key_is_the_executor_named_default) {
    const auto single = parse_text("executor: {type: pool}\nfrontend: {type: wsgi}\n");
    BOOST_TEST(single.mounts.empty());
    BOOST_TEST(single.executors.size() == 1u);
    BOOST_TEST(single.executors[0].name == "default");
    BOOST_TEST(single.executors[0].type == "pool");
    BOOST_TEST(parse_text("executor: {type: pool}\nmounts: [{prefix: /, frontend: {type: wsgi}, executor: default}]\n")
                   .mounts[0]
                   .executor == "default");
    // Without executor.type nothing is declared: the frontend's default runs.
    BOOST_TEST(parse_text("frontend: {type: http}\n").executors.empty());
}

BOOST_AUTO_TEST_CASE(mounts_and_frontend_together_are_refused) {
    BOOST_TEST(error_in("frontend: {type: http}\nmounts: [{prefix: /, frontend: {type: http}}]\n") ==
               "inline.yaml:2:1: mounts: 'mounts' and 'frontend' cannot both be set (serve the frontend as a mount "
               "with 'prefix: /')");
}

BOOST_AUTO_TEST_CASE(a_mount_naming_an_unknown_executor_gets_a_suggestion) {
    BOOST_TEST(error_in("executors: {app: {type: pool}}\n"
                        "mounts:\n"
                        "  - prefix: /x\n"
                        "    frontend: {type: http}\n"
                        "    executor: apq\n"
                        "  - {prefix: /y, frontend: {type: http}, executor: app}\n") ==
               "inline.yaml:5:15: mounts[0].executor: unknown executor 'apq' (did you mean 'app'?)");
    BOOST_TEST(error_in("mounts: [{prefix: /x, frontend: {type: http}, executor: app}]\n") ==
               "inline.yaml:1:57: mounts[0].executor: unknown executor 'app': declare it under 'executors:' (e.g. "
               "'executors: {app: {type: pool}}')");
}

BOOST_AUTO_TEST_CASE(mount_entries_are_checked_key_by_key) {
    BOOST_TEST(error_in("mounts: [{prefx: /x, frontend: {type: http}}]\n") ==
               "inline.yaml:1:11: mounts[0].prefx: unknown key 'prefx' (did you mean 'prefix'?)");
    BOOST_TEST(error_in("mounts: [{frontend: {type: http}}]\n") ==
               "inline.yaml:1:10: mounts[0].prefix: required: the path prefix this mount serves (e.g. '/api', or '/')");
    BOOST_TEST(error_in("mounts: [{prefix: api, frontend: {type: http}}]\n") ==
               "inline.yaml:1:19: mounts[0].prefix: 'api' is not a path prefix: it must start with '/'");
    BOOST_TEST(error_in("mounts: [{prefix: /x}]\n") ==
               "inline.yaml:1:10: mounts[0].frontend: required: the frontend serving this mount, e.g. '{type: http}'");
    BOOST_TEST(error_in("mounts: [{prefix: /x, frontend: {app: 'a:b'}}]\n") ==
               "inline.yaml:1:23: mounts[0].frontend.type: required: the frontend plugin to serve with (e.g. 'http')");
    BOOST_TEST(error_in("mounts: []\n") ==
               "inline.yaml:1:1: mounts: expected a list of mounts ({prefix, frontend, executor}), found none");
    BOOST_TEST(error_in("mounts: {prefix: /}\n") == "inline.yaml:1:1: mounts: expected a list, found a map");
}

BOOST_AUTO_TEST_CASE(a_prefix_mounted_twice_is_refused) {
    BOOST_TEST(error_in("mounts:\n"
                        "  - {prefix: /api, frontend: {type: http}}\n"
                        "  - {prefix: /api/, frontend: {type: http}}\n") ==
               "inline.yaml:3:14: mounts[1].prefix: '/api/' is already mounted by mounts[0]");
}

BOOST_AUTO_TEST_CASE(executor_entries_need_a_type_and_matching_settings) {
    BOOST_TEST(error_in("executors: {app: {pool: {threads: 2}}}\nmounts: [{prefix: /, frontend: {type: http}, "
                        "executor: app}]\n") ==
               "inline.yaml:1:13: executors.app.type: required: the executor to build (e.g. 'pool' or 'inline')");
    BOOST_TEST(error_in("executors: {app: {type: pool, asyncio: {}}}\n") ==
               "inline.yaml:1:31: executors.app.asyncio: settings for executor 'asyncio' but executors.app.type is "
               "'pool' (only a subsection named 'pool' is allowed)");
    BOOST_TEST(error_in("executors: {app: pool}\n") ==
               "inline.yaml:1:18: executors.app: expected a map with the executor's 'type', e.g. '{type: pool}'");
    BOOST_TEST(error_in("executors: [pool]\n") ==
               "inline.yaml:1:1: executors: expected a map of executor names to their settings, e.g. 'app: {type: "
               "pool}'");
    BOOST_TEST(error_in("executor: {type: pool}\nexecutors: {default: {type: inline}}\n") ==
               "inline.yaml:2:13: executors.default: 'default' names the executor of the 'executor:' key; choose "
               "another name");
}

BOOST_AUTO_TEST_CASE(an_executor_no_mount_uses_is_refused) {
    BOOST_TEST(error_in("executors: {app: {type: pool}, spare: {type: pool}}\n"
                        "mounts: [{prefix: /, frontend: {type: http}, executor: app}]\n") ==
               "inline.yaml:1:32: executors.spare: executor 'spare' is used by no mount (add 'executor: spare' to a "
               "mount, or remove it)");
    BOOST_TEST(error_in("executors: {app: {type: pool}}\nfrontend: {type: http}\n") ==
               "inline.yaml:1:13: executors.app: executor 'app' is used by nothing: without 'mounts:' the frontend "
               "runs on the 'executor:' key's executor");
    BOOST_TEST(error_in("executor: {type: pool}\nmounts: [{prefix: /, frontend: {type: http}}]\n") ==
               "inline.yaml:1:1: executor: the executor of the 'executor:' key is used by no mount (a mount uses it "
               "with 'executor: default')");
}

BOOST_AUTO_TEST_CASE(prefixes_are_normalized_or_refused) {
    BOOST_TEST(normalized("/") == "");
    BOOST_TEST(normalized("/api") == "/api");
    BOOST_TEST(normalized("/api/") == "/api");
    BOOST_TEST(normalized("/a/b") == "/a/b");
    BOOST_TEST(normalized("") == "<refused: it must start with '/'>");
    BOOST_TEST(normalized("api") == "<refused: it must start with '/'>");
    BOOST_TEST(normalized("/a?b") == "<refused: a prefix is a path, without '?' or '#'>");
    BOOST_TEST(normalized("/a b") == "<refused: it holds a space or a control character>");
    BOOST_TEST(normalized("/a//b") == "<refused: it holds an empty segment ('//')>");
}

BOOST_AUTO_TEST_SUITE_END()
