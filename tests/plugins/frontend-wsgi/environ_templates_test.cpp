// The shared environ templates: a template is found again only by requests
// with its key (client address, whether the client's port is known, server
// address, protocol version, the server a TLS proxy's client named) and its
// header fields byte for byte, whatever their connection; a slot taken over
// by another key starts empty.
#define BOOST_TEST_MODULE wsgi_environ_templates
#include <boost/test/unit_test.hpp>

#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>

#include "environ_templates.hpp"
#include "wsgi_environ.hpp"

using m0::http::header_field;
using m0::http::request;
using m0::python::py_ref;
using m0::wsgi::environ_template;
using m0::wsgi::environ_templates;
using m0::wsgi::header_signature;
using m0::wsgi::request_facts;

namespace {

struct interpreter {
    interpreter() { m0::python::start(m0::python::interpreter_settings{}); }
};

request from(const char* address, unsigned short port, unsigned short local_port = 8000) {
    request r;
    r.remote = {boost::asio::ip::make_address(address), port};
    r.local = {boost::asio::ip::make_address("127.0.0.1"), local_port};
    return r;
}

// Gives the slot a template, as environ_builder does on a miss.
void fill(environ_template& t) { t.dict = py_ref(PyDict_New()); }

}  // namespace

BOOST_GLOBAL_FIXTURE(interpreter);

BOOST_AUTO_TEST_CASE(connections_of_one_client_with_the_same_headers_share_a_template) {
    m0::python::gil_scope gil;
    environ_templates cache;
    request_facts f;
    const request a = from("127.0.0.1", 40000);
    environ_template& t = cache.slot_for(a, f);
    BOOST_TEST(!t.dict);
    fill(t);
    for (unsigned short port : {40000, 40000, 40001, 50123}) {
        environ_template& again = cache.slot_for(from("127.0.0.1", port), f);
        BOOST_TEST(&again == &t);
        BOOST_TEST(static_cast<bool>(again.dict));
    }
}

BOOST_AUTO_TEST_CASE(another_key_taking_the_slot_starts_empty) {
    m0::python::gil_scope gil;
    environ_templates cache(1, 1);  // one slot: every key shares it
    request_facts f;
    fill(cache.slot_for(from("127.0.0.1", 40000), f));
    // Another client address, another local port, another protocol version,
    // no client port, other headers: each is another key.
    request other_version = from("127.0.0.1", 40000);
    other_version.version = 10;
    request other_headers = from("127.0.0.1", 40000);
    other_headers.headers = {{"Host", "h"}};
    for (const request& r : {from("127.0.0.2", 40000), from("127.0.0.1", 40000, 8001), other_version,
                             from("127.0.0.1", 0), other_headers}) {
        environ_template& t = cache.slot_for(r, f);
        BOOST_TEST(!t.dict);
        BOOST_TEST((t.remote == r.remote.address() && t.local == r.local && t.version == r.version));
        BOOST_TEST(t.headers.matches(r.headers));
        fill(t);
    }
    environ_template& back = cache.slot_for(from("127.0.0.1", 40000), f);
    BOOST_TEST(!back.dict);
}

BOOST_AUTO_TEST_CASE(headers_of_the_same_lengths_and_ends_are_still_told_apart) {
    m0::python::gil_scope gil;
    environ_templates cache(1, 2);
    request_facts f;
    request a = from("127.0.0.1", 40000), b = from("127.0.0.1", 40001);
    a.headers = {{"Cookie", "session=aaaa-same-end"}};
    b.headers = {{"Cookie", "session=bbbb-same-end"}};
    environ_template& ta = cache.slot_for(a, f);
    fill(ta);
    environ_template& tb = cache.slot_for(b, f);
    BOOST_TEST(&tb != &ta);
    BOOST_TEST(!tb.dict);
    fill(tb);
    BOOST_TEST(&cache.slot_for(a, f) == &ta);
}

BOOST_AUTO_TEST_CASE(the_server_a_tls_client_named_is_part_of_the_connection) {
    m0::python::gil_scope gil;
    environ_templates cache(1, 1);
    request_facts tls;
    tls.https = true;
    tls.server_name = "example.test";
    tls.server_port = 443;
    const request r = from("127.0.0.1", 40000);
    fill(cache.slot_for(r, tls));
    BOOST_TEST(static_cast<bool>(cache.slot_for(r, tls).dict));
    request_facts other = tls;
    other.server_name = "other.test";
    BOOST_TEST(!cache.slot_for(r, other).dict);
    fill(cache.slot_for(r, other));
    BOOST_TEST(!cache.slot_for(r, request_facts{}).dict);  // plain http
}

BOOST_AUTO_TEST_CASE(the_least_recently_used_template_is_replaced) {
    m0::python::gil_scope gil;
    environ_templates cache(1, 2);
    request_facts f;
    const request a = from("127.0.0.1", 40000), b = from("127.0.0.2", 40000), c = from("127.0.0.3", 40000);
    fill(cache.slot_for(a, f));
    fill(cache.slot_for(b, f));
    BOOST_TEST(static_cast<bool>(cache.slot_for(a, f).dict));  // a used last
    BOOST_TEST(!cache.slot_for(c, f).dict);                     // takes b's slot
    BOOST_TEST(static_cast<bool>(cache.slot_for(a, f).dict));
    BOOST_TEST(!cache.slot_for(b, f).dict);
}

BOOST_AUTO_TEST_CASE(header_signature_matches_the_same_fields_only) {
    const std::vector<header_field> base = {{"Host", "h"}, {"Accept", "*/*"}};
    header_signature sig;
    sig.assign(base);
    BOOST_TEST(sig.matches(base));
    BOOST_TEST(sig.matches(std::vector<header_field>{{"Host", "h"}, {"Accept", "*/*"}}));
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Host", "h"}, {"Accept", "*/+"}}));
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Host", "h"}, {"accept", "*/*"}}));
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Host", "h"}}));
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Host", "h"}, {"Accept", "*/*"}, {"X", "y"}}));
    // The same bytes split differently between name and value.
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Hos", "th"}, {"Accept", "*/*"}}));
    BOOST_TEST(!sig.matches(std::vector<header_field>{{"Host", "h"}, {"Accept*", "/*"}}));
    sig.assign({});
    BOOST_TEST(sig.matches(std::vector<header_field>{}));
    BOOST_TEST(!sig.matches(base));
}
