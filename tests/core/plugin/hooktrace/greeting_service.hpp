#pragma once
// The service the test module offers and the test frontend looks up: the
// shape every m0 service has (a pure-abstract class named by two statics).
#include <string>
#include <string_view>

namespace m0::test {

class greeting_service {
public:
    static constexpr std::string_view service_name = "m0.test.greeting";
    static constexpr unsigned service_version = 1;
    virtual ~greeting_service() = default;
    virtual std::string greeting() const = 0;
};

}  // namespace m0::test
