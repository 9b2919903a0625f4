#define BOOST_TEST_MODULE access_log_format
// The access log's formats: which strings compile, and the lines a record
// renders to (the end-to-end tests check the engine feeds them).
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "telemetry/access_log_format.hpp"

using m0::telemetry::access_log_format;
using m0::telemetry::response_record;

namespace {

struct fixture {
    m0::http::request req;
    std::vector<std::string> response_values;
    response_record record;

    fixture() {
        req.method = "GET";
        req.target = "/a/b?x=1";
        req.path = "/a/b";
        req.query = "x=1";
        req.headers = {{"User-Agent", "ua/1"}, {"X-Id", "7"}};
        record.req = &req;
        record.remote = {boost::asio::ip::make_address("192.0.2.7"), 4000};
        record.status = 201;
        record.body_bytes = 42;
        record.duration = std::chrono::microseconds(1500);
        record.response_values = &response_values;
    }

    std::string render(const access_log_format& f) {
        std::string out;
        f.render(record, 99, 3, out);
        return out;
    }
};

std::string error_of(std::string_view format) {
    try {
        (void)access_log_format::text(format);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(access_log_format_suite)

BOOST_FIXTURE_TEST_CASE(atoms_render_the_record, fixture) {
    const auto f = access_log_format::text("%(h)s|%(m)s|%(U)s|%(q)s|%(R)s|%(H)s|%(s)s|%(b)s|%(B)s|%(D)s|%(M)s|%(T)s|%(L)s|%(p)s|%(a)s|%(f)s|%%");
    BOOST_TEST(render(f) == "192.0.2.7|GET|/a/b|x=1|/a/b?x=1|HTTP/1.1|201|42|42|1500|1|0|0.001500|99|ua/1|-|%\n");
}

BOOST_FIXTURE_TEST_CASE(header_atoms_any_case, fixture) {
    const auto f = access_log_format::text("%({x-id}i)s %({Content-Type}o)s %({x-none}o)s");
    BOOST_TEST(f.response_headers() == std::vector<std::string>({"content-type", "x-none"}));
    response_values = {"text/plain", ""};
    BOOST_TEST(render(f) == "7 text/plain -\n");
}

BOOST_FIXTURE_TEST_CASE(no_body_and_no_status_are_dashes, fixture) {
    record.body_bytes = 0;
    record.status = 0;
    BOOST_TEST(render(access_log_format::text("%(s)s %(b)s %(B)s")) == "- - 0\n");
}

BOOST_FIXTURE_TEST_CASE(a_rejected_request_has_no_request_line, fixture) {
    record.req = nullptr;
    record.status = 400;
    BOOST_TEST(render(access_log_format::text(access_log_format::gunicorn_default)).find("\"-\" 400 42 \"-\" \"-\"") !=
               std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(client_text_is_escaped, fixture) {
    req.headers = {{"User-Agent", "a\"b\\c\nd\xc3\xa9"}};
    BOOST_TEST(render(access_log_format::text("%(a)s")) == "a\\x22b\\x5cc\\x0ad\\xc3\\xa9\n");
}

BOOST_FIXTURE_TEST_CASE(json_lines_escape_and_use_null_for_absent, fixture) {
    req.headers = {{"User-Agent", "q\"\xff"}};
    const std::string line = render(access_log_format::json());
    BOOST_TEST(line.find(R"("user_agent":"q\"\u00ff")") != std::string::npos, line);
    BOOST_TEST(line.find(R"("referer":null)") != std::string::npos, line);
    BOOST_TEST(line.find(R"("status":201,"bytes":42,"duration_us":1500)") != std::string::npos, line);
    BOOST_TEST(line.find(R"("mount":"/","outcome":"ok","pid":99,"reactor":3})") != std::string::npos, line);
    BOOST_TEST(line.back() == '\n');
}

BOOST_FIXTURE_TEST_CASE(the_user_is_the_basic_credentials_name, fixture) {
    const auto f = access_log_format::text("%(u)s");
    BOOST_TEST(render(f) == "-\n");  // no Authorization header
    req.headers.push_back({"Authorization", "Basic YWxpY2U6czNjcmV0"});  // alice:s3cret
    BOOST_TEST(render(f) == "alice\n");
    req.headers.back().value = "basic  Ym9iOg==";  // bob: (case-insensitive scheme, empty password)
    BOOST_TEST(render(f) == "bob\n");
    req.headers.back().value = "Basic bm8gY29sb24=";  // "no colon": not credentials
    BOOST_TEST(render(f) == "-\n");
    req.headers.back().value = "Bearer YWxpY2U6czNjcmV0";
    BOOST_TEST(render(f) == "-\n");
    req.headers.back().value = "Basic !!!";
    BOOST_TEST(render(f) == "-\n");
    req.headers.back().value = "Basic IgpcOng=";  // "\"\n\\:x": escaped like any client text
    BOOST_TEST(render(f) == "\\x22\\x0a\\x5c\n");
}

BOOST_AUTO_TEST_CASE(bad_formats_name_the_problem) {
    BOOST_TEST(error_of("%(h)s %(zz)s").find("unknown atom '%(zz)s'") != std::string::npos);
    BOOST_TEST(error_of("100% sure").find("'%' at offset 3 starts no atom") != std::string::npos);
    BOOST_TEST(error_of("%(h)").find("starts no atom") != std::string::npos);
    BOOST_TEST(error_of("%(h)s %% %({a}i)s").empty());
}

BOOST_AUTO_TEST_SUITE_END()
