// Native static files for the WSGI frontend.
#include "static_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace m0::wsgi {

namespace {

std::string_view content_type(std::string_view path) {
    static constexpr std::pair<std::string_view, std::string_view> types[] = {
        {".html", "text/html; charset=utf-8"}, {".htm", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".json", "application/json"},
        {".map", "application/json"},          {".txt", "text/plain; charset=utf-8"},
        {".xml", "application/xml"},           {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},               {".gif", "image/gif"},
        {".webp", "image/webp"},               {".ico", "image/x-icon"},
        {".woff", "font/woff"},                {".woff2", "font/woff2"},
        {".ttf", "font/ttf"},                  {".pdf", "application/pdf"},
        {".wasm", "application/wasm"},
    };
    auto dot = path.rfind('.');
    auto slash = path.rfind('/');
    if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
        std::string_view ext = path.substr(dot);
        for (const auto& [e, t] : types) {
            if (e.size() != ext.size()) continue;
            bool same = true;
            for (std::size_t i = 0; i < e.size(); ++i) same = same && e[i] == (ext[i] | 0x20);
            if (same) return t;
        }
    }
    return "application/octet-stream";
}

// No "..", no NUL, no backslash games: the decoded path stays under root.
bool safe_relative(std::string_view rel) {
    if (rel.find('\0') != std::string_view::npos) return false;
    std::size_t start = 0;
    while (start <= rel.size()) {
        auto end = rel.find('/', start);
        if (end == std::string_view::npos) end = rel.size();
        if (rel.substr(start, end - start) == "..") return false;
        start = end + 1;
    }
    return true;
}

void not_found(http::exchange& ex) {
    ex.respond(404, {{"Content-Type", "text/plain; charset=utf-8"}}, "Not Found\n");
}

}  // namespace

bool static_files::try_serve(http::exchange& ex) const {
    std::string_view path = ex.req().path;
    for (const auto& m : mounts_) {
        if (path.substr(0, m.prefix.size()) != m.prefix) continue;
        const auto& method = ex.req().method;
        if (method != "GET" && method != "HEAD") {
            ex.respond(405, {{"Allow", "GET, HEAD"}, {"Content-Type", "text/plain; charset=utf-8"}},
                       "Method Not Allowed\n");
            return true;
        }
        auto rel = http::percent_decode(path.substr(m.prefix.size()));
        if (!rel || rel->empty() || !safe_relative(*rel)) {
            not_found(ex);
            return true;
        }
        std::string file = m.root + "/" + *rel;
        int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st {};
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            if (fd >= 0) ::close(fd);
            not_found(ex);
            return true;
        }
        auto size = static_cast<std::uint64_t>(st.st_size);
        ex.begin(200, {{"Content-Type", std::string(content_type(file))}}, size);
        if (size > 0 && method == "GET")
            ex.write_file(fd, 0, size);
        else
            ::close(fd);
        ex.end();
        return true;
    }
    return false;
}

}  // namespace m0::wsgi
