// Validation of the `frontend:` keys of the WSGI frontend.
#include "wsgi_settings.hpp"

#include <filesystem>

#include <m0/config.hpp>
#include <m0/log.hpp>

namespace m0::wsgi {
namespace fs = std::filesystem;

namespace {

std::string absolute_from(const std::string& base, const std::string& p) {
    fs::path path(p);
    if (path.is_relative()) path = fs::path(base) / path;
    return path.lexically_normal().string();
}

}  // namespace

settings read_settings(const config_node& section, const config_node& root) {
    section.allow_keys({"type", "app", "url_prefix", "chdir", "static", "stream_buffer", "input_buffer"});
    settings s;
    auto app = section.optional_string("app");
    if (!app || app->empty())
        section.fail("app", "the WSGI application is required, e.g. app: \"mysite.wsgi:application\"");
    s.app = *app;

    s.url_prefix = section.string("url_prefix", "");
    if (!s.url_prefix.empty()) {
        if (s.url_prefix.front() != '/') section.fail("url_prefix", "must start with '/'");
        while (!s.url_prefix.empty() && s.url_prefix.back() == '/') s.url_prefix.pop_back();
    }

    if (auto dir = section.optional_string("chdir"); dir && !dir->empty()) {
        s.chdir = absolute_from(section.base_dir(), *dir);
        std::error_code ec;
        if (!fs::is_directory(s.chdir, ec)) section.fail("chdir", "'" + s.chdir + "' is not a directory");
        section.set_effective("chdir", s.chdir);  // --check prints a config valid from anywhere
    }

    s.statics = static_files::parse_static_mounts(section);
    // The one mistake here that no error catches: files at "/" answer every
    // GET before the application is asked (the prefix defaults to "/").
    for (const auto& st : s.statics)
        if (st.prefix == "/")
            log::warning(section.child("static").where() + ": " + section.path() +
                         ".static: files at prefix '/' hide the application from every GET and HEAD (each is "
                         "answered from " + st.root + ", 404 if no file is there); set the prefix, e.g. "
                         "'prefix: /static/' (Django's STATIC_URL)");

    s.stream_buffer = section.byte_size("stream_buffer", 1 << 20, std::uint64_t(1) << 32);
    if (s.stream_buffer < 4096) section.fail("stream_buffer", "must be at least 4k");

    s.input_buffer = section.byte_size("input_buffer", 64 << 10, std::uint64_t(1) << 30);
    if (s.input_buffer < 4096) section.fail("input_buffer", "must be at least 4k");

    // Read without recording a default: server.workers belongs to the core.
    config_node server = root.child("server");
    if (server.present() && server.is_map() && server.has("workers")) {
        try {
            s.multiprocess = std::stoll(server.child("workers").as_string()) > 1;
        } catch (const std::exception&) {
            // The core reports a malformed value.
        }
    }
    return s;
}

}  // namespace m0::wsgi
