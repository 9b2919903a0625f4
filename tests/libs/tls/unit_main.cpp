#define BOOST_TEST_MODULE tls
#include <boost/test/unit_test.hpp>
