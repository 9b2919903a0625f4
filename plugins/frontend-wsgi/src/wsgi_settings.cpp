// Validation of the `frontend:` keys of the WSGI frontend.
#include "wsgi_settings.hpp"

#include <m0/config.hpp>
#include <m0/log.hpp>
#include <m0/python/interpreter.hpp>

namespace m0::wsgi {
settings read_settings(const config_node& section, const config_node& root) {
    // Each key is checked on its own, so one run reports all their errors.
    config_errors errors;
    errors.check([&] {
        section.allow_keys({"type", "app", "url_prefix", "chdir", "static", "stream_buffer", "input_buffer"});
    });
    settings s;
    errors.check([&] {
        auto app = section.optional_string("app");
        if (!app || app->empty())
            section.fail("app", "the WSGI application is required, e.g. app: \"mysite.wsgi:application\"");
        s.app = *app;
    });

    errors.check([&] {
        s.url_prefix = section.string("url_prefix", "");
        if (!s.url_prefix.empty()) {
            if (s.url_prefix.front() != '/') section.fail("url_prefix", "must start with '/'");
            while (!s.url_prefix.empty() && s.url_prefix.back() == '/') s.url_prefix.pop_back();
        }
    });

    errors.check([&] { s.chdir = python::read_chdir(section); });

    errors.check([&] { s.statics = static_files::parse_static_mounts(section); });
    // The one mistake here that no error catches: files at "/" answer every
    // GET before the application is asked (the prefix defaults to "/").
    for (const auto& st : s.statics)
        if (st.prefix == "/")
            log::warning(section.child("static").where() + ": " + section.path() +
                         ".static: files at prefix '/' hide the application from every GET and HEAD (each is "
                         "answered from " + st.root + ", 404 if no file is there); set the prefix, e.g. "
                         "'prefix: /static/' (Django's STATIC_URL)");

    errors.check([&] {
        s.stream_buffer = section.byte_size("stream_buffer", 1 << 20, std::uint64_t(1) << 32);
        if (s.stream_buffer < 4096) section.fail("stream_buffer", "must be at least 4k");
    });
    errors.check([&] {
        s.input_buffer = section.byte_size("input_buffer", 64 << 10, std::uint64_t(1) << 30);
        if (s.input_buffer < 4096) section.fail("input_buffer", "must be at least 4k");
    });
    errors.throw_if_any();

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
