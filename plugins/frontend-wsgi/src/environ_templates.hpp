#pragma once
// Shared environ templates: the environ of an earlier request, kept so that
// a later one with the same headers starts from a copy of it. What changes
// only with the client and the server side (REMOTE_ADDR, SERVER_*,
// SERVER_PROTOCOL) and with the headers (HTTP_*, CONTENT_TYPE) is then made
// once, not per request. A template is keyed by the client's address, the
// server address, the protocol version, the server a TLS proxy's client
// named and the header fields byte for byte, not by the connection: the
// connections of one client that send the same headers (a browser, a load
// generator) share one template, which stays in the CPU's cache. The only
// per-connection value, REMOTE_PORT, is set per request.
// Touched with the GIL held only.
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <m0/http.hpp>
#include <m0/python/ref.hpp>

namespace m0::wsgi {

struct request_facts;

// The header fields a template was made from, in order, names as sent.
class header_signature {
public:
    bool matches(const std::vector<http::header_field>& headers) const noexcept;
    void assign(const std::vector<http::header_field>& headers);
    std::size_t bytes() const noexcept { return bytes_.size(); }

private:
    // One buffer, read front to back: per field its name's and value's
    // lengths (4 bytes each), then the name and the value.
    std::string bytes_;
    std::size_t count_ = 0;
};

struct environ_template {
    // The client's address (not its port), the server side, the protocol
    // version, and for a client of a TLS proxy the server it named.
    boost::asio::ip::address remote;
    bool remote_port = false;  // the client's port is known (a proxy may give the address alone)
    boost::asio::ip::tcp::endpoint local;
    unsigned version = 0;
    bool https = false;
    std::string server_name;
    std::uint16_t server_port = 0;

    header_signature headers;
    python::py_ref dict;                  // null: no template yet
    bool content_length_header = false;   // the headers include Content-Length
    // The request-line values the dict holds (borrowed from it), so that a
    // request repeating them sets nothing.
    PyObject* method = nullptr;
    PyObject* path = nullptr;
    PyObject* query = nullptr;
    PyObject* uri = nullptr;

    // `req` may use this template: same key, same header fields.
    bool serves(const http::request& req, const request_facts& f) const noexcept;
    // Makes this the slot of `req`'s key, with no template yet.
    void reset(const http::request& req, const request_facts& f);
};

// A set-associative cache of templates, least recently used replaced first.
class environ_templates {
public:
    // A template made from more header bytes than this is used once and not
    // kept: the cache stays within a few MiB whatever the clients send.
    static constexpr std::size_t max_kept_header_bytes = 4096;

    // sets * ways templates at most (each ~1 KiB once made).
    explicit environ_templates(std::size_t sets = 256, std::size_t ways = 4);
    // The template `req` may use if there is one, else an empty slot keyed
    // to it (the least recently used of its set).
    environ_template& slot_for(const http::request& req, const request_facts& f);

private:
    // Per slot, kept apart from the templates so that looking through a set
    // reads one cache line: a hash of the key (0: slot unused) and when the
    // slot was last used.
    struct way {
        std::uint64_t tag = 0;
        std::uint64_t last_use = 0;
    };
    std::size_t sets_, ways_;
    std::vector<way> ways_of_;
    std::vector<environ_template> slots_;
    std::uint64_t clock_ = 0;
};

}  // namespace m0::wsgi
