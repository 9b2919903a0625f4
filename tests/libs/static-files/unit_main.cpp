#define BOOST_TEST_MODULE static_files
#include <boost/test/unit_test.hpp>
