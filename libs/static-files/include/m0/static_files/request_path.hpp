#pragma once
// Turns the part of a request path below a static mount into a relative file
// path that cannot name anything outside the mount.
#include <optional>
#include <string>
#include <string_view>

namespace m0::static_files {

struct relative_path {
    std::string path;           // "a/b.txt"; "" for the mount's root
    bool trailing_slash = false; // the request named a directory ("a/" or "")
};

// Percent-decodes `raw` and normalizes it. Refused (nullopt): a malformed
// escape, an encoded '/' or '\' (%2f, %5c: a client has no honest reason to
// send one, and decoding it would change the path's structure), a NUL, and
// any ".." segment. Empty and "." segments are dropped.
std::optional<relative_path> make_relative_path(std::string_view raw);

}  // namespace m0::static_files
