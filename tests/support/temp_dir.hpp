#pragma once
// A scratch directory removed at the end of a test.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace m0::testing {

class temp_dir {
public:
    temp_dir() {
        auto pattern = (std::filesystem::temp_directory_path() / "m0-test-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = pattern;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }

    void write(const std::string& relative, const std::string& content) const {
        auto p = path_ / relative;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
    }

private:
    std::filesystem::path path_;
};

}  // namespace m0::testing
