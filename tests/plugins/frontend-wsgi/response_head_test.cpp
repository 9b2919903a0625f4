// What an application passes to start_response, checked before anything
// reaches the wire: the status line and the header list. Needs the
// interpreter (the arguments are Python objects), started once, without a venv.
#define BOOST_TEST_MODULE wsgi_response_head
#include <boost/test/unit_test.hpp>

#include <string_view>
#include <utility>

#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/ref.hpp>

#include "response_head.hpp"

using m0::python::py_ref;
using m0::wsgi::parse_headers;
using m0::wsgi::parse_status;
using m0::wsgi::response_head;

namespace {

struct interpreter {
    interpreter() { m0::python::start(m0::python::interpreter_settings{}); }
};

// True when the last call failed with `type`; clears the error.
bool failed_with(PyObject* type) {
    const bool match = PyErr_Occurred() && PyErr_ExceptionMatches(type);
    PyErr_Clear();
    return match;
}

py_ref str(std::string_view utf8) {
    return py_ref(PyUnicode_DecodeUTF8(utf8.data(), static_cast<Py_ssize_t>(utf8.size()), nullptr));
}

// [(name, value), ...] from UTF-8 strings.
py_ref header_list(std::initializer_list<std::pair<std::string_view, std::string_view>> headers) {
    py_ref list(PyList_New(0));
    for (const auto& [name, value] : headers) {
        py_ref n = str(name), v = str(value);
        py_ref item(PyTuple_Pack(2, n.get(), v.get()));
        PyList_Append(list.get(), item.get());
    }
    return list;
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(interpreter);

BOOST_AUTO_TEST_CASE(status_is_three_digits_a_space_and_a_reason) {
    m0::python::gil_scope gil;
    unsigned code = 0;
    BOOST_TEST(parse_status(str("200 OK").get(), code));
    BOOST_TEST(code == 200u);
    BOOST_TEST(parse_status(str("599 ").get(), code));
    BOOST_TEST(code == 599u);
    for (const char* bad : {"200", "200OK", "20 OK", "099 Low", "600 High", "2x0 OK", "200 OK\r\nX-Injected: 1",
                            "200 O\x7fK"}) {
        BOOST_TEST_CONTEXT(bad) { BOOST_TEST((!parse_status(str(bad).get(), code) && failed_with(PyExc_ValueError))); }
    }
    BOOST_TEST((!parse_status(str("200 \xe2\x82\xac").get(), code) && failed_with(PyExc_ValueError)));  // not latin-1
    py_ref number(PyLong_FromLong(200));
    BOOST_TEST((!parse_status(number.get(), code) && failed_with(PyExc_TypeError)));
}

BOOST_AUTO_TEST_CASE(headers_pass_except_those_the_engine_owns) {
    m0::python::gil_scope gil;
    response_head head;
    auto list = header_list({{"Content-Type", "text/plain; charset=utf-8"},
                             {"Content-Length", "12"},
                             {"Transfer-Encoding", "chunked"},
                             {"connection", "close"},
                             {"X-Caf\xc3\xa9", "v"},
                             {"X-Latin", "caf\xc3\xa9"}});
    // "X-Café" is not a token: refused; without it the rest passes.
    BOOST_TEST((!parse_headers(list.get(), head) && failed_with(PyExc_ValueError)));
    PySequence_DelItem(list.get(), 4);
    BOOST_REQUIRE(parse_headers(list.get(), head));
    BOOST_TEST(head.content_length.value_or(0) == 12u);
    BOOST_REQUIRE(head.headers.size() == 2u);
    BOOST_TEST(head.headers[0].name == "Content-Type");
    BOOST_TEST(head.headers[1].value == "caf\xe9");  // latin-1 bytes on the wire
}

BOOST_AUTO_TEST_CASE(nothing_invalid_reaches_the_wire) {
    m0::python::gil_scope gil;
    response_head head;
    for (auto bad : {header_list({{"X-A", "a\r\nSet-Cookie: evil=1"}}), header_list({{"X-A", "a\nb"}}),
                     header_list({{"X A", "v"}}), header_list({{"", "v"}}), header_list({{"Content-Length", "12x"}}),
                     header_list({{"Content-Length", ""}}), header_list({{"X-A", "\xe2\x82\xac"}})}) {
        BOOST_TEST((!parse_headers(bad.get(), head) && failed_with(PyExc_ValueError)));
    }
    auto nul_value = header_list({{"X-A", std::string_view("a\0b", 3)}});
    BOOST_TEST((!parse_headers(nul_value.get(), head) && failed_with(PyExc_ValueError)));
    py_ref tuple_of_headers(Py_BuildValue("((ss))", "X-A", "v"));
    BOOST_TEST((!parse_headers(tuple_of_headers.get(), head) && failed_with(PyExc_TypeError)));
    py_ref triple(Py_BuildValue("[(sss)]", "X-A", "v", "w"));
    BOOST_TEST((!parse_headers(triple.get(), head) && failed_with(PyExc_TypeError)));
}

// The same str objects on every call, as an application's constants are:
// checked once, and only their checks are skipped, never the values'.
BOOST_AUTO_TEST_CASE(strings_seen_before_are_remembered_not_their_values) {
    m0::python::gil_scope gil;
    m0::wsgi::checked_strings checked;
    unsigned code = 0;
    py_ref ok = str("201 Created"), bad = str("20 OK");
    for (int i = 0; i < 2; ++i) {
        BOOST_TEST(parse_status(ok.get(), code, &checked));
        BOOST_TEST(code == 201u);
        BOOST_TEST((!parse_status(bad.get(), code, &checked) && failed_with(PyExc_ValueError)));
    }
    py_ref type = str("Content-Type"), length = str("content-length"), date = str("Date"), spaced = str("X A");
    auto headers = [&](PyObject* name, std::string_view value) {
        py_ref v = str(value);
        py_ref item(PyTuple_Pack(2, name, v.get()));
        py_ref list(PyList_New(0));
        PyList_Append(list.get(), item.get());
        return list;
    };
    for (int i = 0; i < 2; ++i) {
        response_head head;
        BOOST_REQUIRE(parse_headers(headers(type.get(), "text/plain").get(), head, &checked));
        BOOST_REQUIRE(head.headers.size() == 1u);
        BOOST_TEST(head.headers[0].value == "text/plain");
        BOOST_TEST((!parse_headers(headers(type.get(), "a\r\nX-Injected: 1").get(), head, &checked) &&
                    failed_with(PyExc_ValueError)));
        BOOST_REQUIRE(parse_headers(headers(length.get(), "7").get(), head, &checked));
        BOOST_TEST(head.content_length.value_or(0) == 7u);
        BOOST_TEST(head.headers.empty());
        BOOST_TEST((!parse_headers(headers(length.get(), "7x").get(), head, &checked) &&
                    failed_with(PyExc_ValueError)));
        BOOST_REQUIRE(parse_headers(headers(date.get(), "today").get(), head, &checked));
        BOOST_TEST(head.headers.empty());  // the engine's
        BOOST_TEST((!parse_headers(headers(spaced.get(), "v").get(), head, &checked) &&
                    failed_with(PyExc_ValueError)));
    }
}

// The list a response reuses (response_buffers) holds an earlier response's
// headers: none of them may survive into this one, on success or failure.
BOOST_AUTO_TEST_CASE(headers_left_from_an_earlier_response_are_replaced) {
    m0::python::gil_scope gil;
    response_head head;
    head.headers = {{"Set-Cookie", "session=earlier-user"}, {"X-Old", "1"}, {"X-Older", "2"}};
    py_ref fewer = header_list({{"Content-Type", "text/plain"}, {"Content-Length", "13"}});
    BOOST_TEST(parse_headers(fewer.get(), head));
    BOOST_TEST(head.headers.size() == 1u);
    BOOST_TEST(head.headers[0].name == "Content-Type");
    BOOST_TEST(head.headers[0].value == "text/plain");
    BOOST_TEST(head.content_length.value_or(0) == 13u);

    py_ref more = header_list({{"X-A", "a"}, {"X-B", "b"}, {"X-C", "c"}, {"X-D", "d"}});
    BOOST_TEST(parse_headers(more.get(), head));
    BOOST_TEST(head.headers.size() == 4u);
    BOOST_TEST(head.headers[3].name == "X-D");
    BOOST_TEST(!head.content_length.has_value());

    // A failure keeps only what was accepted before it, nothing older.
    head.headers = {{"Set-Cookie", "session=earlier-user"}, {"X-Old", "1"}};
    py_ref bad = header_list({{"X-New", "n"}, {"Bad Name", "v"}});
    BOOST_TEST(!parse_headers(bad.get(), head));
    BOOST_TEST(failed_with(PyExc_ValueError));
    BOOST_TEST(head.headers.size() == 1u);
    BOOST_TEST(head.headers[0].name == "X-New");
}
