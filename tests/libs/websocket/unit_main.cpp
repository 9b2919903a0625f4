#define BOOST_TEST_MODULE websocket
#include <boost/test/unit_test.hpp>
