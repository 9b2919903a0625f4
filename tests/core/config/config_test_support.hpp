#pragma once
// Shared by the config tests: YAML written to a real file (so messages carry
// its name, line and column) and capture of a config_error's message.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

namespace m0::test {

class temp_yaml {
public:
    explicit temp_yaml(std::string_view text, std::string_view name = "m0.yaml") {
        static std::atomic<int> counter{0};
        dir_ = std::filesystem::temp_directory_path() /
               ("m0-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(dir_);
        path_ = dir_ / name;
        std::ofstream(path_) << text;
    }
    ~temp_yaml() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    temp_yaml(const temp_yaml&) = delete;
    temp_yaml& operator=(const temp_yaml&) = delete;

    std::string path() const { return path_.string(); }
    std::string dir() const { return dir_.string(); }
    config_document load() const { return config_document::load(path()); }

private:
    std::filesystem::path dir_;
    std::filesystem::path path_;
};

// The message of the config_error that `f` throws; fails the test when it throws none.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const config_error& e) {
        return e.what();
    }
    BOOST_FAIL("expected a config_error");
    return {};
}

}  // namespace m0::test
