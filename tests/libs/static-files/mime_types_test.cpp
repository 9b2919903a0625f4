#include <boost/test/unit_test.hpp>

#include <m0/static_files/mime_types.hpp>

using namespace m0::static_files;

BOOST_AUTO_TEST_SUITE(mime_types)

BOOST_AUTO_TEST_CASE(common_extensions) {
    BOOST_TEST(mime_type_for("index.html") == "text/html");
    BOOST_TEST(mime_type_for("css/site.css") == "text/css");
    BOOST_TEST(mime_type_for("app.js") == "text/javascript");
    BOOST_TEST(mime_type_for("data.json") == "application/json");
    BOOST_TEST(mime_type_for("logo.png") == "image/png");
    BOOST_TEST(mime_type_for("photo.JPG") == "image/jpeg");
    BOOST_TEST(mime_type_for("icon.svg") == "image/svg+xml");
    BOOST_TEST(mime_type_for("module.wasm") == "application/wasm");
    BOOST_TEST(mime_type_for("font.woff2") == "font/woff2");
    BOOST_TEST(mime_type_for("notes.txt") == "text/plain");
}

BOOST_AUTO_TEST_CASE(unknown_or_missing_extension_is_octet_stream) {
    BOOST_TEST(mime_type_for("archive.xyz") == "application/octet-stream");
    BOOST_TEST(mime_type_for("README") == "application/octet-stream");
    BOOST_TEST(mime_type_for(".html") == "application/octet-stream");  // a hidden file, not an extension
    BOOST_TEST(mime_type_for("dir.html/file") == "application/octet-stream");
}

BOOST_AUTO_TEST_SUITE_END()
