#define BOOST_TEST_MODULE frontend_http
#include <boost/test/unit_test.hpp>
