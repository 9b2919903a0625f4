// Scalar syntaxes, through the public getters: durations, byte sizes,
// booleans, integers, and how they print in the effective configuration.
#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

using namespace std::chrono_literals;
using m0::config_document;

namespace {

config_document doc_with(std::string_view text) {
    return config_document::from_string("v: " + std::string(text) + "\n", "inline.yaml");
}

std::optional<std::int64_t> duration_ns(std::string_view text) {
    try {
        return doc_with(text).root().duration("v", 0s).count();
    } catch (const m0::config_error&) {
        return std::nullopt;
    }
}

std::optional<std::uint64_t> size_of(std::string_view text) {
    try {
        return doc_with(text).root().byte_size("v", 0, UINT64_MAX);
    } catch (const m0::config_error&) {
        return std::nullopt;
    }
}

std::optional<bool> boolean_of(std::string_view text) {
    try {
        return doc_with(text).root().boolean("v", false);
    } catch (const m0::config_error&) {
        return std::nullopt;
    }
}

// How a value read with `read` prints in the effective configuration.
template <class Read>
std::string effective_of(std::string_view text, Read read) {
    const auto doc = doc_with(text);
    read(doc.root());
    return doc.effective_yaml();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(config_values_suite)

BOOST_AUTO_TEST_CASE(durations_take_units_or_bare_seconds) {
    BOOST_TEST(duration_ns("30s").value_or(-1) == std::chrono::nanoseconds(30s).count());
    BOOST_TEST(duration_ns("250ms").value_or(-1) == std::chrono::nanoseconds(250ms).count());
    BOOST_TEST(duration_ns("2m").value_or(-1) == std::chrono::nanoseconds(2min).count());
    BOOST_TEST(duration_ns("10us").value_or(-1) == std::chrono::nanoseconds(10us).count());
    BOOST_TEST(duration_ns("1h").value_or(-1) == std::chrono::nanoseconds(1h).count());
    BOOST_TEST(duration_ns("5ns").value_or(-1) == 5);
    BOOST_TEST(duration_ns("5").value_or(-1) == std::chrono::nanoseconds(5s).count());
    BOOST_TEST(duration_ns("1.5").value_or(-1) == std::chrono::nanoseconds(1500ms).count());
    BOOST_TEST(duration_ns("0.25s").value_or(-1) == std::chrono::nanoseconds(250ms).count());
    BOOST_TEST(duration_ns("0").value_or(-1) == 0);
    for (const auto* bad : {"''", "s", "-1s", "5 parsecs", "1.2.3s", "abc", "10d", "1e30s", "[1]"})
        BOOST_TEST(!duration_ns(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(durations_print_in_the_largest_exact_unit) {
    const auto read = [](const m0::config_node& n) { n.duration("v", 0s); };
    BOOST_TEST(effective_of("30", read) == "v: 30s\n");
    BOOST_TEST(effective_of("90s", read) == "v: 90s\n");
    BOOST_TEST(effective_of("120s", read) == "v: 2m\n");
    BOOST_TEST(effective_of("3600s", read) == "v: 1h\n");
    BOOST_TEST(effective_of("0.25", read) == "v: 250ms\n");
    BOOST_TEST(effective_of("10us", read) == "v: 10us\n");
    BOOST_TEST(effective_of("0", read) == "v: 0s\n");
}

BOOST_AUTO_TEST_CASE(byte_sizes_are_powers_of_1024) {
    BOOST_TEST(size_of("512").value_or(0) == 512u);
    BOOST_TEST(size_of("64k").value_or(0) == 64u * 1024);
    BOOST_TEST(size_of("64KB").value_or(0) == 64u * 1024);
    BOOST_TEST(size_of("1m").value_or(0) == 1u << 20);
    BOOST_TEST(size_of("1mb").value_or(0) == 1u << 20);
    BOOST_TEST(size_of("2g").value_or(0) == 2ull << 30);
    BOOST_TEST(size_of("2GB").value_or(0) == 2ull << 30);
    BOOST_TEST(size_of("100b").value_or(0) == 100u);
    for (const auto* bad : {"''", "k", "-1", "1.5m", "3t", "99999999999999999999", "20000000000g"})
        BOOST_TEST(!size_of(bad).has_value(), bad);
    const auto read = [](const m0::config_node& n) { n.byte_size("v", 0, UINT64_MAX); };
    BOOST_TEST(effective_of("1024m", read) == "v: 1g\n");
    BOOST_TEST(effective_of("8192", read) == "v: 8k\n");
    BOOST_TEST(effective_of("1000", read) == "v: 1000\n");
}

BOOST_AUTO_TEST_CASE(byte_size_above_the_maximum_is_refused) {
    const auto doc = doc_with("2g");
    BOOST_CHECK_THROW(doc.root().byte_size("v", 0, 1ull << 30), m0::config_error);
    BOOST_TEST(doc_with("1g").root().byte_size("v", 0, 1ull << 30) == 1ull << 30);
}

BOOST_AUTO_TEST_CASE(booleans_accept_true_false_yes_no_on_off) {
    for (const auto* yes : {"true", "True", "yes", "on", "ON"}) BOOST_TEST(boolean_of(yes).value_or(false), yes);
    for (const auto* no : {"false", "no", "off", "Off"}) BOOST_TEST(!boolean_of(no).value_or(true), no);
    for (const auto* bad : {"1", "0", "y", "enabled"}) BOOST_TEST(!boolean_of(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(integers_and_numbers_parse_strictly) {
    const auto integer = [](std::string_view text) { return doc_with(text).root().integer("v", 0, -100, 100); };
    BOOST_TEST(integer("42") == 42);
    BOOST_TEST(integer("-7") == -7);
    for (const auto* bad : {"4x", "1.0", "''", "0x10", "101"})
        BOOST_CHECK_THROW(integer(bad), m0::config_error);
    const auto number = [](std::string_view text) { return doc_with(text).root().number("v", 0, 0, 10); };
    BOOST_TEST(number("0.5") == 0.5);
    BOOST_TEST(number("3") == 3.0);
    for (const auto* bad : {"nan", "inf", "-0.1", "ten"}) BOOST_CHECK_THROW(number(bad), m0::config_error);
}

BOOST_AUTO_TEST_SUITE_END()
