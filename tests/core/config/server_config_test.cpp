#include <optional>
#include <filesystem>
#include <thread>

#include <boost/test/unit_test.hpp>

#include "config/server_config.hpp"
#include "config_test_support.hpp"

using m0::config_document;
using m0::parse_server_config;
using m0::test::error_of;
using m0::test::temp_yaml;
using namespace std::chrono_literals;

namespace {

m0::server_config parse_text(std::string_view text) {
    return parse_server_config(config_document::from_string(text, "inline.yaml").root());
}

std::string listen_error(std::string_view address) {
    return error_of([&] { parse_text("server:\n  listen: '" + std::string(address) + "'\n"); });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(server_config_suite)

BOOST_AUTO_TEST_CASE(empty_config_gives_every_default) {
    const auto doc = config_document::load("");
    const auto config = parse_server_config(doc.root());
    BOOST_TEST(config.listen.size() == 1u);
    BOOST_TEST(config.listen[0].text == "127.0.0.1:8000");
    BOOST_TEST(config.listen[0].endpoint.address().to_string() == "127.0.0.1");
    BOOST_TEST(config.listen[0].endpoint.port() == 8000);
    const unsigned cpus = std::max(1u, std::min(256u, std::thread::hardware_concurrency()));
    BOOST_TEST(config.threads == cpus);
    BOOST_TEST(config.workers == 1u);
    BOOST_TEST(config.listener == "reuseport");
    BOOST_TEST(config.pin_cores);
    BOOST_TEST(config.drain_timeout.count() == 30000);
    BOOST_TEST(config.plugin_paths.empty());
    BOOST_TEST(config.frontend_type == "http");
    BOOST_TEST(config.executor_type == "");
    const m0::http_limits defaults;
    BOOST_TEST(config.http.max_request_line == defaults.max_request_line);
    BOOST_TEST(config.http.max_body_size == defaults.max_body_size);
    BOOST_TEST(config.http.keepalive_timeout.count() == defaults.keepalive_timeout.count());
    BOOST_TEST(config.log_level == "info");
}

BOOST_AUTO_TEST_CASE(effective_yaml_lists_the_defaults) {
    const auto doc = config_document::load("");
    parse_server_config(doc.root());
    const auto yaml = doc.effective_yaml();
    for (const auto* line : {"listen:\n    - 127.0.0.1:8000", "workers: 1", "scheduler:\n  type: reactors", "pin_cores: true",
                             "drain_timeout: 30s", "type: http", "max_body_size: 1g", "max_header_size: 8k",
                             "keepalive_timeout: 75s", "max_requests_per_connection: 0", "level: info"})
        BOOST_TEST(yaml.find(line) != std::string::npos, "missing '" << line << "' in\n" << yaml);
    // The effective configuration is itself a valid config that parses the same.
    const auto again = parse_text(yaml);
    BOOST_TEST(again.listen[0].text == "127.0.0.1:8000");
    BOOST_TEST(again.http.keepalive_timeout.count() == 75000);
}

BOOST_AUTO_TEST_CASE(every_core_key_is_read) {
    temp_yaml file(
        "server:\n"
        "  listen: ['0.0.0.0:8080', '[::1]:9000', 'localhost:80']\n"
        "  threads: 3\n"
        "  listener: shared\n"
        "  pin_cores: no\n"
        "  drain_timeout: 2.5s\n"
        "plugins:\n"
        "  path: [lib, /opt/m0/plugins]\n"
        "frontend:\n"
        "  type: wsgi\n"
        "  app: hello:app\n"
        "executor:\n"
        "  type: pool\n"
        "  pool: {threads: 8}\n"
        "http:\n"
        "  max_request_line: 4k\n"
        "  max_header_size: 16k\n"
        "  max_header_count: 50\n"
        "  max_header_bytes: 64k\n"
        "  max_body_size: 10m\n"
        "  header_timeout: 5s\n"
        "  body_timeout: 6s\n"
        "  write_timeout: 7s\n"
        "  keepalive_timeout: 2m\n"
        "  max_requests_per_connection: 1000\n"
        "  max_connections_per_reactor: 500\n"
        "python: {path: [src]}\n"
        "realtime: {}\n"
        "log:\n"
        "  level: debug\n");
    const auto config = parse_server_config(file.load().root());
    BOOST_TEST(config.listen.size() == 3u);
    BOOST_TEST(config.listen[0].endpoint.address().to_string() == "0.0.0.0");
    BOOST_TEST(config.listen[0].endpoint.port() == 8080);
    BOOST_TEST(config.listen[1].text == "[::1]:9000");
    BOOST_TEST(config.listen[1].endpoint.address().to_string() == "::1");
    BOOST_TEST(config.listen[1].endpoint.port() == 9000);
    BOOST_TEST(config.listen[2].endpoint.address().to_string() == "127.0.0.1");
    BOOST_TEST(config.listen[2].endpoint.port() == 80);
    BOOST_TEST(config.threads == 3u);
    BOOST_TEST(config.listener == "shared");
    BOOST_TEST(!config.pin_cores);
    BOOST_TEST(config.drain_timeout.count() == 2500);
    BOOST_TEST(config.plugin_paths ==
               (std::vector<std::string>{(std::filesystem::path(file.dir()) / "lib").string(), "/opt/m0/plugins"}));
    BOOST_TEST(config.frontend_type == "wsgi");
    BOOST_TEST(config.executor_type == "pool");
    BOOST_TEST(config.http.max_request_line == 4096u);
    BOOST_TEST(config.http.max_header_size == 16384u);
    BOOST_TEST(config.http.max_header_count == 50u);
    BOOST_TEST(config.http.max_header_bytes == 65536u);
    BOOST_TEST(config.http.max_body_size == 10u << 20);
    BOOST_TEST(config.http.header_timeout.count() == 5000);
    BOOST_TEST(config.http.body_timeout.count() == 6000);
    BOOST_TEST(config.http.write_timeout.count() == 7000);
    BOOST_TEST(config.http.keepalive_timeout.count() == 120000);
    BOOST_TEST(config.http.max_requests_per_connection == 1000u);
    BOOST_TEST(config.http.max_connections_per_reactor == 500u);
    BOOST_TEST(config.log_level == "debug");
}

BOOST_AUTO_TEST_CASE(one_listen_string_counts_as_a_list_of_one) {
    const auto config = parse_text("server:\n  listen: '[::]:8443'\n");
    BOOST_TEST(config.listen.size() == 1u);
    BOOST_TEST(config.listen[0].endpoint.address().to_string() == "::");
    BOOST_TEST(config.listen[0].endpoint.port() == 8443);
}

BOOST_AUTO_TEST_CASE(set_overrides_listen_and_threads) {
    temp_yaml file("server:\n  listen: 127.0.0.1:8000\n  threads: 2\n");
    auto doc = file.load();
    doc.set("server.listen=[127.0.0.1:8001,'[::1]:9000']");
    doc.set("server.threads=4");
    const auto config = parse_server_config(doc.root());
    BOOST_TEST(config.listen.size() == 2u);
    BOOST_TEST(config.listen[0].endpoint.port() == 8001);
    BOOST_TEST(config.listen[1].endpoint.address().to_string() == "::1");
    BOOST_TEST(config.threads == 4u);
}

BOOST_AUTO_TEST_CASE(bad_listen_addresses_are_refused_with_their_location) {
    temp_yaml file("server:\n  listen:\n    - 127.0.0.1:8000\n    - example.com:80\n");
    BOOST_TEST(error_of([&] { parse_server_config(file.load().root()); }) ==
               file.path() +
                   ":4:7: server.listen[1]: expected 'host:port' or '[ipv6]:port' with an IP address or localhost as "
                   "host, found 'example.com:80' ('example.com' is not an IP address)");
    auto doc = config_document::load("");
    doc.set("server.listen=127.0.0.1");
    BOOST_TEST(error_of([&] { parse_server_config(doc.root()); }) ==
               "--set server.listen=127.0.0.1: server.listen: expected 'host:port' or '[ipv6]:port' with an IP "
               "address or localhost as host, found '127.0.0.1' (missing port)");
    for (const auto* bad : {"127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http", "::1:80", "[::1]",
                            "[::1:80", "[::1]80", ":80", "300.1.1.1:80"})
        BOOST_TEST(listen_error(bad).find("server.listen: expected 'host:port'") != std::string::npos, bad);
    BOOST_TEST(listen_error("::1:80").find("write an IPv6 address in brackets") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(listen_address_parses_standalone) {
    const auto doc = config_document::from_string("a: 1", "inline.yaml");
    const auto endpoint = m0::parse_listen_address("[fe80::1]:65535", doc.root().child("a"));
    BOOST_TEST(endpoint.address().is_v6());
    BOOST_TEST(endpoint.port() == 65535);
    BOOST_TEST(m0::parse_listen_address("127.0.0.1:0", doc.root()).port() == 0);
}

BOOST_AUTO_TEST_CASE(empty_listen_list_is_refused) {
    BOOST_TEST(error_of([] { parse_text("server:\n  listen: []\n"); }) ==
               "inline.yaml:2:3: server.listen: expected at least one address, found an empty list");
}

BOOST_AUTO_TEST_CASE(threads_out_of_range_are_refused) {
    temp_yaml zero("server:\n  threads: 0\n");
    BOOST_TEST(error_of([&] { parse_server_config(zero.load().root()); }) ==
               zero.path() + ":2:12: server.threads: expected an integer in 1..256, found '0'");
    temp_yaml many("server:\n  threads: 257\n");
    BOOST_TEST(error_of([&] { parse_server_config(many.load().root()); }) ==
               many.path() + ":2:12: server.threads: expected an integer in 1..256, found '257'");
    BOOST_TEST(parse_text("server: {threads: 256}").threads == 256u);
    BOOST_TEST(parse_text("server: {threads: 1}").threads == 1u);
}

BOOST_AUTO_TEST_CASE(workers_are_serving_processes_1_to_256) {
    BOOST_TEST(parse_text("server: {workers: 4, threads: 2}").workers == 4u);
    BOOST_TEST(parse_text("server: {workers: 256}").workers == 256u);
    BOOST_TEST(parse_text("server: {workers: 1}").workers == 1u);
    temp_yaml zero("server:\n  workers: 0\n");
    BOOST_TEST(error_of([&] { parse_server_config(zero.load().root()); }) ==
               zero.path() + ":2:12: server.workers: expected an integer in 1..256, found '0'");
    BOOST_TEST(error_of([] { parse_text("server:\n  workers: 257\n"); }) ==
               "inline.yaml:2:12: server.workers: expected an integer in 1..256, found '257'");
    BOOST_TEST(error_of([] { parse_text("server:\n  workers: many\n"); }) ==
               "inline.yaml:2:12: server.workers: expected an integer in 1..256, found 'many'");
}

BOOST_AUTO_TEST_CASE(default_threads_share_the_cpus_among_the_workers) {
    // One reactor per core in all: `--workers N` alone never runs more
    // reactors than cores (each process at least one).
    const unsigned cpus = std::max(1u, std::min(256u, std::thread::hardware_concurrency()));
    for (unsigned workers : {1u, 2u, 3u, 4u, 256u}) {
        const auto config = parse_text("server: {workers: " + std::to_string(workers) + "}");
        BOOST_TEST(config.threads == std::max(1u, cpus / workers), workers << " workers");
        BOOST_TEST(config.workers * config.threads <= std::max(cpus, workers));
    }
    // Set, it is what it says whatever the workers.
    BOOST_TEST(parse_text("server: {workers: 4, threads: 3}").threads == 3u);
    // --check shows the value resolved.
    const auto doc = config_document::from_string("server: {workers: 256}", "inline.yaml");
    (void)parse_server_config(doc.root());
    BOOST_TEST(doc.effective_yaml().find("threads: 1\n") != std::string::npos, doc.effective_yaml());
}

BOOST_AUTO_TEST_CASE(the_scheduler_type_defaults_to_reactors_and_must_name_a_plugin) {
    BOOST_TEST(parse_text("").scheduler_type == "reactors");
    BOOST_TEST(parse_text("scheduler: {type: balanced}").scheduler_type == "balanced");
    const auto not_a_map = error_of([] { parse_text("scheduler: balanced\n"); });
    BOOST_TEST(not_a_map.find("scheduler: expected a map with the scheduler's 'type'") != std::string::npos, not_a_map);
    const auto empty = error_of([] { parse_text("scheduler: {type: ''}\n"); });
    BOOST_TEST(empty.find("scheduler.type: expected the scheduler plugin") != std::string::npos, empty);
}

BOOST_AUTO_TEST_CASE(a_shared_listener_serves_any_number_of_worker_processes) {
    BOOST_TEST(parse_text("server: {workers: 2, listener: shared}").listener == "shared");
    BOOST_TEST(parse_text("server: {workers: 1, listener: shared}").listener == "shared");
    BOOST_TEST(parse_text("server: {workers: 3, listener: reuseport}").workers == 3u);
}

BOOST_AUTO_TEST_CASE(process_replacement_keys) {
    const auto config = parse_text("server: {workers: 2, max_requests: 1000, max_requests_jitter: 50, max_rss: 512m}");
    BOOST_TEST(config.max_requests == 1000u);
    BOOST_TEST(config.max_requests_jitter == 50u);
    BOOST_TEST(config.max_rss == 512u * 1024 * 1024);
    const auto defaults = parse_text("server: {workers: 2}");
    BOOST_TEST(defaults.max_requests == 0u);
    BOOST_TEST(defaults.max_rss == 0u);
    BOOST_TEST(defaults.pid_file.empty());
    BOOST_TEST(error_of([] { parse_text("server:\n  workers: 2\n  max_requests_jitter: 5\n"); }) ==
               "inline.yaml:3:24: server.max_requests_jitter: needs server.max_requests (the jitter is added to it)");
    BOOST_TEST(error_of([] { parse_text("server:\n  max_requests: 100\n"); }) ==
               "inline.yaml:2:17: server.max_requests: a serving process is replaced by its supervisor, which needs "
               "server.workers > 1 (it is 1)");
    BOOST_TEST(error_of([] { parse_text("server:\n  workers: 2\n  max_rss: big\n"); }) ==
               "inline.yaml:3:12: server.max_rss: expected a size (e.g. 512, 64k, 1m, 2g), found 'big'");
    BOOST_TEST(error_of([] { parse_text("server:\n  workers: 2\n  max_requests: -1\n"); }).find("server.max_requests") !=
               std::string::npos);
    BOOST_TEST(error_of([] { parse_text("server:\n  pid_file: ''\n"); }) ==
               "inline.yaml:2:13: server.pid_file: expected a file path, found an empty string");
}

BOOST_AUTO_TEST_CASE(every_bad_value_of_the_core_sections_is_reported_in_one_run) {
    const auto doc = config_document::from_string(
        "server:\n  threads: many\n  workers: none\n  max_requests: 100\n  thraeds: 2\n"
        "http:\n  max_body_size: big\n  header_timeout: soon\n"
        "log:\n  level: loud\n  access_file: ''\n",
        "inline.yaml");
    m0::config_errors errors;
    const auto config = parse_server_config(doc.root(), errors);
    // What could be read is there, defaults where a value was wrong, for the plugins to be built.
    BOOST_TEST(config.workers == 1u);
    BOOST_TEST(config.max_requests == 100u);
    BOOST_TEST(config.log_level == "info");
    const auto all = error_of([&] { errors.throw_if_any(); });
    // max_requests needs workers > 1, but workers is the mistake: said once.
    BOOST_TEST(all ==
               "inline.yaml:2:12: server.threads: expected an integer in 1..256, found 'many'\n"
               "inline.yaml:3:12: server.workers: expected an integer in 1..256, found 'none'\n"
               "inline.yaml:5:3: server.thraeds: unknown key 'thraeds' (did you mean 'threads'?)\n"
               "inline.yaml:7:18: http.max_body_size: expected a size (e.g. 512, 64k, 1m, 2g), found 'big'\n"
               "inline.yaml:8:19: http.header_timeout: expected a duration (e.g. 30s, 250ms, 2m, 10us, 1h; a bare "
               "number is seconds), found 'soon'\n"
               "inline.yaml:10:10: log.level: expected one of debug, info, warning, error, found 'loud'\n"
               "inline.yaml:11:16: log.access_file: expected a file path, found an empty string");
}

BOOST_AUTO_TEST_CASE(wrong_types_are_refused) {
    BOOST_TEST(error_of([] { parse_text("server:\n  pin_cores: sometimes\n"); }) ==
               "inline.yaml:2:14: server.pin_cores: expected a boolean (true/false, yes/no, on/off), found 'sometimes'");
    BOOST_TEST(error_of([] { parse_text("server:\n  listener: [shared]\n"); }) ==
               "inline.yaml:2:3: server.listener: expected a string, found a list");
    BOOST_TEST(error_of([] { parse_text("server:\n  listener: fair\n"); }) ==
               "inline.yaml:2:13: server.listener: expected one of reuseport, shared, found 'fair'");
    BOOST_TEST(error_of([] { parse_text("server: [a]\n"); }) == "inline.yaml:1:1: server: expected a map, found a list");
    BOOST_TEST(error_of([] { parse_text("http:\n  max_body_size: lots\n"); }) ==
               "inline.yaml:2:18: http.max_body_size: expected a size (e.g. 512, 64k, 1m, 2g), found 'lots'");
    BOOST_TEST(error_of([] { parse_text("http:\n  max_header_size: 5g\n"); }).find("up to 4294967295 bytes") !=
               std::string::npos);
    BOOST_TEST(error_of([] { parse_text("http:\n  header_timeout: -3s\n"); }).rfind("inline.yaml:2:19: http.header_timeout: expected a duration", 0) == 0);
    BOOST_TEST(error_of([] { parse_text("plugins:\n  path: {a: b}\n"); }) ==
               "inline.yaml:2:3: plugins.path: expected a string or a list of strings, found a map");
    BOOST_TEST(error_of([] { parse_text("log:\n  level: wraning\n"); }) ==
               "inline.yaml:2:10: log.level: expected one of debug, info, warning, error, found 'wraning' (did you mean 'warning'?)");
}

BOOST_AUTO_TEST_CASE(unknown_keys_are_refused_with_a_suggestion) {
    // A top-level key the core does not own names a module plugin; m0 refuses
    // it (with the suggestion) when no such plugin exists (tests/core/plugin).
    temp_yaml top("server:\n  threads: 2\nexecuter:\n  type: pool\nrealtime: {}\n");
    BOOST_TEST(parse_server_config(top.load().root()).module_sections == (std::vector<std::string>{"executer", "realtime"}));
    BOOST_TEST(error_of([] { parse_text("server:\n  treads: 2\n"); }) ==
               "inline.yaml:2:3: server.treads: unknown key 'treads' (did you mean 'threads'?)");
    BOOST_TEST(error_of([] { parse_text("http:\n  max_body: 1m\n"); }).find("http.max_body: unknown key") !=
               std::string::npos);
    BOOST_TEST(error_of([] { parse_text("log:\n  file: x\n"); }) ==
               "inline.yaml:2:3: log.file: unknown key 'file' (known keys: level, access, access_format, access_file)");
}

BOOST_AUTO_TEST_CASE(frontend_section_requires_a_type) {
    BOOST_TEST(error_of([] { parse_text("frontend:\n  root: www\n"); }) ==
               "inline.yaml:1:1: frontend.type: required: the frontend plugin to serve with (e.g. 'http')");
    BOOST_TEST(error_of([] { parse_text("frontend: http\n"); }) ==
               "inline.yaml:1:11: frontend: expected a map, found 'http'");
    BOOST_TEST(parse_text("frontend:\n  type: http\n  routes: []\n").frontend_type == "http");
}

BOOST_AUTO_TEST_CASE(executor_subsection_must_match_the_type) {
    BOOST_TEST(parse_text("executor:\n  type: pool\n  pool: {threads: 4}\n").executor_type == "pool");
    BOOST_TEST(parse_text("executor:\n  type: inline\n").executor_type == "inline");
    BOOST_TEST(error_of([] { parse_text("executor:\n  type: pool\n  asyncio:\n    loops: 2\n"); }) ==
               "inline.yaml:3:3: executor.asyncio: settings for executor 'asyncio' but executor.type is 'pool' "
               "(only a subsection named 'pool' is allowed)");
    // Without a type, the frontend says which executor runs: checked once it
    // is known (check_default_executor_settings).
    BOOST_TEST(parse_text("executor:\n  pool:\n    threads: 4\n").executor_type == "");
    BOOST_TEST(error_of([] { parse_text("executor:\n  tpye: pool\n"); }) ==
               "inline.yaml:2:9: executor.tpye: unknown key 'tpye' (did you mean 'type'?)");
}

BOOST_AUTO_TEST_CASE(settings_of_the_default_executor_need_no_type) {
    const auto doc = config_document::from_string("executor:\n  pool:\n    threads: 2\n", "inline.yaml");
    auto executor = doc.root().child("executor");
    m0::check_default_executor_settings(executor, {"pool"});  // WSGI's default: accepted
    BOOST_TEST(error_of([&] { m0::check_default_executor_settings(executor, {"asyncio"}); }) ==
               "inline.yaml:2:3: executor.pool: settings for executor 'pool' but the effective executor is 'asyncio' "
               "(the frontend's default); set executor.type: pool to run on it");
    BOOST_TEST(error_of([&] { m0::check_default_executor_settings(executor, {"inline", "asyncio"}); }) ==
               "inline.yaml:2:3: executor.pool: settings for executor 'pool' but the effective executors are "
               "'inline', 'asyncio' (the frontend's default); set executor.type: pool to run on it");
    BOOST_TEST(error_of([&] { m0::check_default_executor_settings(executor, {}); }) ==
               "inline.yaml:2:3: executor.pool: settings for executor 'pool' but no executor is built from "
               "'executor:' (every mount names one of 'executors:')");
}

BOOST_AUTO_TEST_CASE(plugin_paths_from_set_resolve_against_the_cwd) {
    temp_yaml file("plugins:\n  path: [here]\n");
    auto doc = file.load();
    BOOST_TEST(parse_server_config(doc.root()).plugin_paths[0] == (std::filesystem::path(file.dir()) / "here").string());
    doc.set("plugins.path=there");
    BOOST_TEST(parse_server_config(doc.root()).plugin_paths[0] ==
               (std::filesystem::current_path() / "there").string());
}

BOOST_AUTO_TEST_CASE(forwarded_allow_ips_default_to_loopback_and_take_cidrs_or_star) {
    const auto addr = [](const char* s) { return boost::asio::ip::make_address(s); };
    auto cfg = parse_text("");
    BOOST_TEST(cfg.forwarded_allow_ips.contains(addr("127.0.0.1")));
    BOOST_TEST(cfg.forwarded_allow_ips.contains(addr("::1")));
    BOOST_TEST(cfg.forwarded_allow_ips.contains(addr("::")));  // "unix:": a Unix socket's client, as the engine reads it
    BOOST_TEST(!cfg.forwarded_allow_ips.contains(addr("10.0.0.1")));
    cfg = parse_text("server:\n  forwarded_allow_ips: [10.0.0.0/8, 'fd00::/8']\n");
    BOOST_TEST(cfg.forwarded_allow_ips.contains(addr("10.2.3.4")));
    BOOST_TEST(!cfg.forwarded_allow_ips.contains(addr("127.0.0.1")));
    cfg = parse_text("server:\n  forwarded_allow_ips: '*'\n");
    BOOST_TEST(cfg.forwarded_allow_ips.everyone());
    cfg = parse_text("server:\n  forwarded_allow_ips: []\n");
    BOOST_TEST(cfg.forwarded_allow_ips.empty());
    BOOST_TEST(error_of([] { parse_text("server:\n  forwarded_allow_ips: [10.0.0.0/8, 10.0.0.1/8]\n"); }) ==
               "inline.yaml:2:37: server.forwarded_allow_ips[1]: expected an IP address or a CIDR block "
               "('10.0.0.0/8', 'fd00::/8'), 'unix:' or '*', found '10.0.0.1/8': host bits are set beyond /8 (the network "
               "is 10.0.0.0/8)");
    BOOST_TEST(error_of([] { parse_text("server:\n  forwarded_allow_ips: ['*', 10.0.0.0/8]\n"); })
                   .find("'*' trusts every peer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_listen_address_marked_proxy) {
    const auto cfg = parse_text("server:\n  listen: ['127.0.0.1:8000', '127.0.0.1:8001 proxy']\n");
    BOOST_TEST(!cfg.listen[0].proxy_protocol);
    BOOST_TEST(cfg.listen[1].proxy_protocol);
    BOOST_TEST(cfg.listen[1].endpoint.port() == 8001);
    BOOST_TEST(listen_error("127.0.0.1:8001 proxi") ==
               "inline.yaml:2:11: server.listen: unknown listen option 'proxi' in '127.0.0.1:8001 proxi' (did you "
               "mean 'proxy'?)");
}

BOOST_AUTO_TEST_CASE(listeners_speak_http2_unless_marked_or_turned_off) {
    const auto cfg = parse_text("server:\n  listen: ['127.0.0.1:8000', '127.0.0.1:8001 h1', '127.0.0.1:8002 tls h2']\n");
    BOOST_TEST(cfg.http2.enabled);
    BOOST_TEST(!cfg.listen[0].http2.has_value());
    BOOST_TEST((cfg.listen[1].http2 == std::optional<bool>(false)));
    BOOST_TEST((cfg.listen[2].http2 == std::optional<bool>(true)));
    BOOST_TEST(cfg.listen[2].tls);
    BOOST_TEST(listen_error("127.0.0.1:8001 h1 h2") ==
               "inline.yaml:2:11: server.listen: '127.0.0.1:8001 h1 h2' is marked both h1 and h2: choose one");
    BOOST_TEST(listen_error("127.0.0.1:8001 h3").find("unknown listen option 'h3'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_http2_section) {
    const auto cfg = parse_text(
        "http2:\n  enabled: false\n  max_concurrent_streams: 8\n  initial_window_size: 1m\n"
        "  max_header_list_size: 16k\n  ping_interval: 0s\n  reset_burst: 10\n");
    BOOST_TEST(!cfg.http2.enabled);
    BOOST_TEST(cfg.http2.max_concurrent_streams == 8u);
    BOOST_TEST(cfg.http2.initial_window_size == 1024u * 1024u);
    BOOST_TEST(cfg.http2.max_header_list_size == 16u * 1024u);
    BOOST_TEST(cfg.http2.ping_interval.count() == 0);
    BOOST_TEST(cfg.http2.reset_burst == 10u);
    BOOST_TEST(cfg.http2.reset_rate == 50u);  // the default
    BOOST_TEST(error_of([] { parse_text("http2:\n  max_frame_size: 1k\n"); }) ==
               "inline.yaml:2:19: http2.max_frame_size: expected at least 16384 bytes, found 1024");
    BOOST_TEST(error_of([] { parse_text("http2:\n  max_concurrent_streams: 0\n"); })
                   .find("http2.max_concurrent_streams") != std::string::npos);
    BOOST_TEST(error_of([] { parse_text("http2:\n  max_streams: 5\n"); }).find("max_concurrent_streams") !=
               std::string::npos);  // the nearest key is suggested
}

BOOST_AUTO_TEST_SUITE_END()
