#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include <m0/static_files/file_root.hpp>

#include "support/temp_dir.hpp"

using namespace m0::static_files;
namespace testing = m0::testing;
namespace fs = std::filesystem;

namespace {

// Site under <tmp>/root, a secret next to it, symlinks both ways.
struct site {
    testing::temp_dir dir;
    site() {
        dir.write("root/index.html", "home");
        dir.write("root/sub/page.txt", "page");
        dir.write("secret.txt", "secret");
        fs::create_symlink(dir.path() / "secret.txt", dir.path() / "root/abs_out");
        fs::create_symlink("../secret.txt", dir.path() / "root/rel_out");
        fs::create_symlink("sub/page.txt", dir.path() / "root/rel_in");
        fs::create_directory_symlink("..", dir.path() / "root/up");
        ::mkfifo((dir.path() / "root/fifo").c_str(), 0600);
    }
    std::string root() const { return (dir.path() / "root").string(); }
};

std::string read_all(int fd) {
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(file_roots)

BOOST_AUTO_TEST_CASE(opens_files_and_the_root_itself) {
    site s;
    file_root root(s.root());
    BOOST_TEST(read_all(root.open("index.html")) == "home");
    BOOST_TEST(read_all(root.open("sub/page.txt")) == "page");
    int fd = root.open("");
    BOOST_TEST_REQUIRE(fd >= 0);
    struct stat st {};
    BOOST_TEST(::fstat(fd, &st) == 0);
    BOOST_TEST(S_ISDIR(st.st_mode));
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(symlink_inside_the_root_is_followed) {
    site s;
    file_root root(s.root());
    BOOST_TEST(read_all(root.open("rel_in")) == "page");
}

BOOST_AUTO_TEST_CASE(nothing_outside_the_root_can_be_opened) {
    site s;
    file_root root(s.root());
    for (const char* rel : {"abs_out", "rel_out", "up/secret.txt", "../secret.txt", "sub/../../secret.txt"}) {
        BOOST_TEST_INFO(rel);
        int fd = root.open(rel);
        if (fd >= 0) BOOST_TEST(read_all(fd) != "secret");
        BOOST_TEST(fd < 0);
    }
    BOOST_TEST(root.open("missing.txt") == -ENOENT);
}

BOOST_AUTO_TEST_CASE(a_fifo_opens_without_blocking) {
    site s;
    file_root root(s.root());
    int fd = root.open("fifo");  // would hang forever with a blocking open
    BOOST_TEST_REQUIRE(fd >= 0);
    struct stat st {};
    BOOST_TEST(::fstat(fd, &st) == 0);
    BOOST_TEST(!S_ISREG(st.st_mode));
    ::close(fd);
}

BOOST_AUTO_TEST_CASE(missing_root_throws) {
    testing::temp_dir dir;
    BOOST_CHECK_THROW(file_root((dir.path() / "nope").string()), std::system_error);
}

BOOST_AUTO_TEST_SUITE_END()
