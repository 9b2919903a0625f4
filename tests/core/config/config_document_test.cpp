#define BOOST_TEST_MODULE config
#include <filesystem>

#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

#include "config_test_support.hpp"

using m0::config_document;
using m0::test::error_of;
using m0::test::temp_yaml;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(config_document_suite)

BOOST_AUTO_TEST_CASE(an_unclosed_bracket_is_named_where_it_opened) {
    // yaml-cpp notices at the ':' of "log:"; the reader needs the '[' of line 3.
    temp_yaml file("server:\n  threads: 4\n  listen: [127.0.0.1:8000\nlog:\n  level: info\n");
    BOOST_TEST(error_of([&] { file.load(); }) ==
               file.path() + ":3:11: YAML syntax: this '[' is never closed (a list written [a, b] needs its ']')");
    temp_yaml map("frontend: {type: http, routes: [{path: /a, body: x}]\nlog: {level: info}\n");
    BOOST_TEST(error_of([&] { map.load(); }) ==
               map.path() + ":1:11: YAML syntax: this '{' is never closed (a map written {a: 1} needs its '}')");
    // Brackets inside words and quotes open nothing.
    temp_yaml quoted("a: x[1\nb: \"[\"\nc: [\"]\", 'it''s'\n");
    BOOST_TEST(error_of([&] { quoted.load(); }).find(":3:4: YAML syntax: this '[' is never closed") !=
               std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_tab_in_the_indentation_is_named) {
    temp_yaml file("server:\n  threads: 4\n\tlisten: 127.0.0.1:8000\n");
    BOOST_TEST(error_of([&] { file.load(); }) ==
               file.path() + ":3:1: YAML syntax: a tab in the indentation; YAML indents with spaces only (replace "
                             "the tab with spaces)");
}

BOOST_AUTO_TEST_CASE(other_syntax_errors_keep_their_position) {
    temp_yaml file("server:\n  threads: 4: 5\n");
    const auto message = error_of([&] { file.load(); });
    BOOST_TEST(message.rfind(file.path() + ":2:", 0) == 0, message);
    BOOST_TEST(message.find("YAML syntax: a ':' where no key can start") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(missing_file_is_an_error_naming_it) {
    const auto message = error_of([] { config_document::load("/nonexistent/m0.yaml"); });
    BOOST_TEST(message.rfind("/nonexistent/m0.yaml: cannot read: ", 0) == 0, message);
}

BOOST_AUTO_TEST_CASE(duplicate_key_is_refused_with_both_locations) {
    temp_yaml file("server:\n  threads: 2\n  threads: 3\n");
    BOOST_TEST(error_of([&] { file.load(); }) ==
               file.path() + ":3:3: server.threads: duplicate key (first at " + file.path() + ":2:3)");
}

BOOST_AUTO_TEST_CASE(top_level_must_be_a_map) {
    temp_yaml file("- a\n- b\n");
    BOOST_TEST(error_of([&] { file.load(); }) ==
               file.path() + ":1:1: expected a map of sections (server:, frontend:, ...), found a list");
}

BOOST_AUTO_TEST_CASE(typed_getters_read_present_values) {
    temp_yaml file(
        "s:\n"
        "  name: hello\n"
        "  count: 42\n"
        "  flag: off\n"
        "  ratio: 0.25\n"
        "  wait: 250ms\n"
        "  size: 64k\n"
        "  one: a\n"
        "  many: [a, b]\n"
        "  mode: shared\n");
    const auto doc = file.load();
    const auto s = doc.root().child("s");
    BOOST_TEST(s.string("name", "x") == "hello");
    BOOST_TEST(s.integer("count", 0, 0, 100) == 42);
    BOOST_TEST(s.boolean("flag", true) == false);
    BOOST_TEST(s.number("ratio", 1, 0, 1) == 0.25);
    BOOST_TEST(s.duration("wait", 1s).count() == std::chrono::nanoseconds(250ms).count());
    BOOST_TEST(s.byte_size("size", 0, 1 << 20) == 64u * 1024);
    BOOST_TEST(s.string_list("one", {}) == std::vector<std::string>{"a"});
    BOOST_TEST(s.string_list("many", {}) == (std::vector<std::string>{"a", "b"}));
    BOOST_TEST(s.one_of("mode", "reuseport", {"reuseport", "shared"}) == "shared");
    BOOST_TEST(*s.optional_string("name") == "hello");
    BOOST_TEST(!s.optional_string("absent").has_value());
    BOOST_TEST(s.keys() == (std::vector<std::string>{"name", "count", "flag", "ratio", "wait", "size", "one", "many", "mode"}));
}

BOOST_AUTO_TEST_CASE(absent_keys_give_defaults_and_are_recorded) {
    const auto doc = config_document::from_string("s: {}\n", "inline.yaml");
    const auto s = doc.root().child("s");
    BOOST_TEST(s.string("name", "dflt") == "dflt");
    BOOST_TEST(s.integer("count", 7, 0, 10) == 7);
    BOOST_TEST(s.boolean("flag", true));
    BOOST_TEST(s.duration("wait", 30s).count() == std::chrono::nanoseconds(30s).count());
    BOOST_TEST(s.byte_size("size", 1u << 30, UINT64_MAX) == 1u << 30);
    BOOST_TEST(s.string_list("many", {"x"}) == std::vector<std::string>{"x"});
    BOOST_TEST(doc.effective_yaml() ==
               "s:\n  name: dflt\n  count: 7\n  flag: true\n  wait: 30s\n  size: 1g\n  many:\n    - x\n");
}

BOOST_AUTO_TEST_CASE(effective_yaml_reparses_to_the_same_values) {
    temp_yaml file("s:\n  text: \"yes\"\n  wait: 0.5\n  n: 3\n");
    const auto doc = file.load();
    const auto s = doc.root().child("s");
    BOOST_TEST(s.string("text", "") == "yes");
    BOOST_TEST(s.duration("wait", 0s).count() == std::chrono::nanoseconds(500ms).count());
    BOOST_TEST(s.string("empty", "") == "");
    BOOST_TEST(s.integer("n", 0, 0, 9) == 3);
    const auto again = config_document::from_string(doc.effective_yaml(), "effective");
    const auto t = again.root().child("s");
    BOOST_TEST(t.string("text", "x") == "yes");
    BOOST_TEST(t.child("text").is_scalar());
    BOOST_TEST(t.duration("wait", 0s).count() == std::chrono::nanoseconds(500ms).count());
    BOOST_TEST(t.integer("n", 0, 0, 9) == 3);
    BOOST_TEST(t.string("empty", "x") == "");
    BOOST_TEST(doc.effective_yaml().find("wait: 500ms") != std::string::npos, doc.effective_yaml());
}

BOOST_AUTO_TEST_CASE(wrong_types_name_location_path_expected_and_found) {
    temp_yaml file(
        "s:\n"
        "  count: four\n"
        "  big: 300\n"
        "  flag: maybe\n"
        "  name: [a]\n"
        "  wait: soon\n"
        "  size: 3t\n"
        "  many: {a: 1}\n"
        "  list: [a, [b]]\n"
        "  mode: sharde\n"
        "  ratio: 2\n");
    const auto doc = file.load();
    const auto s = doc.root().child("s");
    const auto f = file.path();
    BOOST_TEST(error_of([&] { s.integer("count", 1, 1, 256); }) ==
               f + ":2:10: s.count: expected an integer in 1..256, found 'four'");
    BOOST_TEST(error_of([&] { s.integer("big", 1, 1, 256); }) ==
               f + ":3:8: s.big: expected an integer in 1..256, found '300'");
    BOOST_TEST(error_of([&] { s.boolean("flag", true); }) ==
               f + ":4:9: s.flag: expected a boolean (true/false, yes/no, on/off), found 'maybe'");
    BOOST_TEST(error_of([&] { s.string("name", ""); }) == f + ":5:3: s.name: expected a string, found a list");
    BOOST_TEST(error_of([&] { s.duration("wait", 1s); }) ==
               f + ":6:9: s.wait: expected a duration (e.g. 30s, 250ms, 2m, 10us, 1h; a bare number is seconds), found 'soon'");
    BOOST_TEST(error_of([&] { s.byte_size("size", 1, 1u << 30); }) ==
               f + ":7:9: s.size: expected a size (e.g. 512, 64k, 1m, 2g) up to 1g bytes, found '3t'");
    BOOST_TEST(error_of([&] { s.string_list("many", {}); }) ==
               f + ":8:3: s.many: expected a string or a list of strings, found a map");
    BOOST_TEST(error_of([&] { s.string_list("list", {}); }) == f + ":9:13: s.list[1]: expected a string, found a list");
    BOOST_TEST(error_of([&] { s.one_of("mode", "reuseport", {"reuseport", "shared"}); }) ==
               f + ":10:9: s.mode: expected one of reuseport, shared, found 'sharde' (did you mean 'shared'?)");
    BOOST_TEST(error_of([&] { s.number("ratio", 0.5, 0, 1); }) ==
               f + ":11:10: s.ratio: expected a number in 0..1, found '2'");
    BOOST_TEST(error_of([&] { s.child("count").child("x").string("y", ""); }) ==
               f + ":2:10: s.count: expected a map, found 'four'");
}

BOOST_AUTO_TEST_CASE(getter_on_a_scalar_section_says_a_map_was_expected) {
    temp_yaml file("server: 5\n");
    const auto doc = file.load();
    BOOST_TEST(error_of([&] { doc.root().child("server").integer("threads", 1, 1, 256); }) ==
               file.path() + ":1:9: server: expected a map, found '5'");
    BOOST_TEST(error_of([&] { doc.root().child("server").items(); }) ==
               file.path() + ":1:9: server: expected a list, found '5'");
}

BOOST_AUTO_TEST_CASE(unknown_key_suggests_the_nearest_known_key) {
    temp_yaml file("server:\n  listen: 127.0.0.1:8000\n  thraeds: 4\n");
    const auto doc = file.load();
    BOOST_TEST(error_of([&] { doc.root().child("server").allow_keys({"listen", "threads"}); }) ==
               file.path() + ":3:3: server.thraeds: unknown key 'thraeds' (did you mean 'threads'?)");
}

BOOST_AUTO_TEST_CASE(unknown_key_far_from_any_lists_the_known_keys) {
    temp_yaml file("server:\n  colour: blue\n");
    const auto doc = file.load();
    BOOST_TEST(error_of([&] { doc.root().child("server").allow_keys({"listen", "threads"}); }) ==
               file.path() + ":2:3: server.colour: unknown key 'colour' (known keys: listen, threads)");
}

BOOST_AUTO_TEST_CASE(nearest_key_is_case_insensitive_and_only_when_close) {
    const std::vector<std::string> known{"listen", "threads", "listener", "pin_cores"};
    BOOST_TEST(m0::nearest_key("Threads", known).value_or("") == "threads");
    BOOST_TEST(m0::nearest_key("treads", known).value_or("") == "threads");
    BOOST_TEST(m0::nearest_key("listn", known).value_or("") == "listen");
    BOOST_TEST(m0::nearest_key("pin_core", known).value_or("") == "pin_cores");
    BOOST_TEST(!m0::nearest_key("workers", known).has_value());
    BOOST_TEST(!m0::nearest_key("x", known).has_value());
}

BOOST_AUTO_TEST_CASE(where_points_at_scalars_sections_and_parents_of_absent_keys) {
    temp_yaml file("frontend:\n  routes:\n    - path: /a\n    - path: /b\n      status: teapot\n");
    const auto doc = file.load();
    const auto routes = doc.root().child("frontend").child("routes");
    BOOST_TEST(routes.where() == file.path() + ":2:3");
    const auto items = routes.items();
    BOOST_TEST(items.size() == 2u);
    BOOST_TEST(items[1].path() == "frontend.routes[1]");
    BOOST_TEST(items[1].child("path").as_string() == "/b");
    BOOST_TEST(items[1].child("absent").where() == file.path() + ":4:7");
    BOOST_TEST(!items[1].child("absent").present());
    BOOST_TEST(error_of([&] { items[1].integer("status", 200, 100, 599); }) ==
               file.path() + ":5:15: frontend.routes[1].status: expected an integer in 100..599, found 'teapot'");
    BOOST_TEST(error_of([&] { items[0].fail("path", "must not be /a"); }) ==
               file.path() + ":3:13: frontend.routes[0].path: must not be /a");
}

BOOST_AUTO_TEST_CASE(keys_with_dots_are_quoted_in_paths) {
    temp_yaml file("headers:\n  X.Custom: 1\n");
    const auto doc = file.load();
    const auto node = doc.root().child("headers").child("X.Custom");
    BOOST_TEST(node.path() == "headers[\"X.Custom\"]");
    BOOST_TEST(node.as_string() == "1");
    BOOST_TEST(doc.root().child("headers").keys() == std::vector<std::string>{"X.Custom"});
    BOOST_TEST(doc.effective_yaml() == "headers:\n  X.Custom: \"1\"\n");
}

BOOST_AUTO_TEST_CASE(base_dir_is_the_config_files_directory_or_the_cwd) {
    temp_yaml file("frontend:\n  root: www\n");
    auto doc = file.load();
    const auto cwd = std::filesystem::current_path().string();
    BOOST_TEST(doc.root().child("frontend").child("root").base_dir() == file.dir());
    BOOST_TEST(doc.root().child("absent").base_dir() == file.dir());
    doc.set("frontend.static.root=site");
    BOOST_TEST(doc.root().child("frontend").child("static").base_dir() == cwd);
    BOOST_TEST(doc.root().child("frontend").child("root").base_dir() == file.dir());
    BOOST_TEST(config_document::from_string("a: 1", "inline").root().base_dir() == cwd);
}

BOOST_AUTO_TEST_CASE(set_overrides_a_scalar_and_keeps_the_rest) {
    temp_yaml file("server:\n  threads: 2\n  listen: 127.0.0.1:8000\n");
    auto doc = file.load();
    doc.set("server.threads=4");
    const auto server = doc.root().child("server");
    BOOST_TEST(server.integer("threads", 1, 1, 256) == 4);
    BOOST_TEST(server.string("listen", "") == "127.0.0.1:8000");
    BOOST_TEST(server.child("threads").where() == "--set server.threads=4");
}

BOOST_AUTO_TEST_CASE(set_parses_the_value_as_yaml) {
    auto doc = config_document::load("");
    doc.set("server.listen=[127.0.0.1:8000,'[::1]:9000']");
    BOOST_TEST(doc.root().child("server").string_list("listen", {}) ==
               (std::vector<std::string>{"127.0.0.1:8000", "[::1]:9000"}));
    doc.set("server.listen=[::1]:9000");
    BOOST_TEST(doc.root().child("server").string_list("listen", {}) == std::vector<std::string>{"[::1]:9000"});
    doc.set("http={max_body_size: 1m}");
    BOOST_TEST(doc.root().child("http").byte_size("max_body_size", 0, UINT64_MAX) == 1u << 20);
}

BOOST_AUTO_TEST_CASE(set_creates_intermediate_maps_and_list_items) {
    temp_yaml file("frontend:\n  routes:\n    - path: /a\n");
    auto doc = file.load();
    doc.set("a.b.c=value");
    BOOST_TEST(doc.root().child("a").child("b").string("c", "") == "value");
    doc.set("frontend.routes[0].status=204");
    doc.set("frontend.routes[1].path=/b");
    const auto routes = doc.root().child("frontend").child("routes").items();
    BOOST_TEST(routes.size() == 2u);
    BOOST_TEST(routes[0].string("path", "") == "/a");
    BOOST_TEST(routes[0].integer("status", 200, 100, 599) == 204);
    BOOST_TEST(routes[1].string("path", "") == "/b");
}

BOOST_AUTO_TEST_CASE(set_errors_point_at_the_assignment) {
    auto doc = config_document::load("");
    doc.set("server.threads=x");
    BOOST_TEST(error_of([&] { doc.root().child("server").integer("threads", 1, 1, 256); }) ==
               "--set server.threads=x: server.threads: expected an integer in 1..256, found 'x'");
    BOOST_TEST(error_of([&] { doc.set("server.threads"); }) ==
               "--set server.threads: expected key.path=value (e.g. --set server.threads=4)");
    BOOST_TEST(error_of([&] { doc.set("=4"); }) == "--set =4: expected key.path=value (e.g. --set server.threads=4)");
    BOOST_TEST(error_of([&] { doc.set("server..threads=4"); }) ==
               "--set server..threads=4: expected key.path=value (e.g. --set server.threads=4)");
    BOOST_TEST(error_of([&] { doc.set("server.threads.max=4"); }) ==
               "--set server.threads.max=4: server.threads: expected a map to hold key 'max', found 'x'");
    BOOST_TEST(error_of([&] { doc.set("server[0]=4"); }) ==
               "--set server[0]=4: server: expected a list to hold index 0, found a map");
}

BOOST_AUTO_TEST_SUITE_END()
