// The `frontend:` keys of the wsgi frontend, read without starting Python.
#define BOOST_TEST_MODULE wsgi_settings
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>

#include <m0/config.hpp>

#include "core/config/config_test_support.hpp"
#include "support/temp_dir.hpp"
#include "wsgi_settings.hpp"

using m0::wsgi::read_settings;
using m0::wsgi::settings;

namespace {

settings parse(const std::string& yaml) {
    auto doc = m0::config_document::from_string(yaml, "test.yaml");
    return read_settings(doc.root().child("frontend"), doc.root());
}

// The config_error message for `yaml`; the test fails if it parses.
std::string error_of(const std::string& yaml) {
    return m0::test::error_of([&] { parse(yaml); });
}

}  // namespace

BOOST_AUTO_TEST_CASE(defaults) {
    auto s = parse("frontend:\n  type: wsgi\n  app: \"mysite.wsgi:application\"\n");
    BOOST_TEST(s.app == "mysite.wsgi:application");
    BOOST_TEST(s.url_prefix == "");
    BOOST_TEST(s.chdir == "");
    BOOST_TEST(s.statics.empty());
    BOOST_TEST(s.stream_buffer == 1u << 20);
    BOOST_TEST(!s.multiprocess);
}

BOOST_AUTO_TEST_CASE(url_prefix_loses_its_trailing_slashes) {
    BOOST_TEST(parse("frontend:\n  app: a:b\n  url_prefix: /mount//\n").url_prefix == "/mount");
    BOOST_TEST(parse("frontend:\n  app: a:b\n  url_prefix: /\n").url_prefix == "");
    auto e = error_of("frontend:\n  app: a:b\n  url_prefix: mount\n");
    BOOST_TEST(e.find("must start with '/'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(chdir_resolves_against_the_config_file_and_must_exist) {
    m0::testing::temp_dir dir;
    dir.write("app/wsgi.py", "");
    dir.write("conf/m0.yaml", "frontend:\n  app: wsgi:app\n  chdir: ../app\n");
    auto doc = m0::config_document::load((dir.path() / "conf/m0.yaml").string());
    auto s = read_settings(doc.root().child("frontend"), doc.root());
    BOOST_TEST(s.chdir == (dir.path() / "app").lexically_normal().string());

    auto e = error_of("frontend:\n  app: a:b\n  chdir: " + (dir.path() / "missing").string() + "\n");
    BOOST_TEST(e.find("chdir") != std::string::npos);
    BOOST_TEST(e.find("is not a directory") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(stream_buffer_has_a_floor) {
    BOOST_TEST(parse("frontend:\n  app: a:b\n  stream_buffer: 64k\n").stream_buffer == 64u * 1024);
    auto e = error_of("frontend:\n  app: a:b\n  stream_buffer: 1k\n");
    BOOST_TEST(e.find("at least 4k") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(static_mounts_use_the_shared_parser) {
    m0::testing::temp_dir dir;
    dir.write("static/site.css", "x");
    auto root = (dir.path() / "static").string();
    auto s = parse("frontend:\n  app: a:b\n  static: [{prefix: /static, root: '" + root + "'}]\n");
    BOOST_TEST_REQUIRE(s.statics.size() == 1u);
    BOOST_TEST(s.statics[0].prefix == "/static/");
    BOOST_TEST(s.statics[0].root == std::filesystem::canonical(root).string());
}

BOOST_AUTO_TEST_CASE(multiprocess_follows_server_workers) {
    BOOST_TEST(parse("server: {workers: 4}\nfrontend:\n  app: a:b\n").multiprocess);
    BOOST_TEST(!parse("server: {workers: 1}\nfrontend:\n  app: a:b\n").multiprocess);
    // A malformed value is the core's to report, not this section's.
    BOOST_TEST(!parse("server: {workers: many}\nfrontend:\n  app: a:b\n").multiprocess);
}

BOOST_AUTO_TEST_CASE(errors_name_the_key_and_the_location) {
    auto e = error_of("frontend:\n  type: wsgi\n");
    BOOST_TEST(e.find("app") != std::string::npos);
    BOOST_TEST(e.find("the WSGI application is required") != std::string::npos);

    e = error_of("frontend:\n  app: a:b\n  url_prefx: /x\n");
    BOOST_TEST(e.find("url_prefx") != std::string::npos);
    BOOST_TEST(e.find("test.yaml:3") != std::string::npos);
}
