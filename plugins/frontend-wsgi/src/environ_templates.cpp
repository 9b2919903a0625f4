// Finding a connection's environ template and checking its headers.
#include "environ_templates.hpp"

#include <cstring>
#include <functional>

#include "wsgi_environ.hpp"

namespace m0::wsgi {

namespace {

std::size_t address_hash(const boost::asio::ip::address& a) noexcept {
    if (a.is_v4()) return a.to_v4().to_uint();
    const auto bytes = a.to_v6().to_bytes();
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

bool header_signature::matches(const std::vector<http::header_field>& headers) const noexcept {
    if (headers.size() != lengths_.size()) return false;
    const char* p = bytes_.data();
    for (std::size_t i = 0; i < headers.size(); ++i) {
        const auto [name_len, value_len] = lengths_[i];
        const http::header_field& h = headers[i];
        if (h.name.size() != name_len || h.value.size() != value_len ||
            std::memcmp(p, h.name.data(), name_len) != 0 || std::memcmp(p + name_len, h.value.data(), value_len) != 0)
            return false;
        p += name_len + value_len;
    }
    return true;
}

void header_signature::assign(const std::vector<http::header_field>& headers) {
    bytes_.clear();
    lengths_.clear();
    for (const http::header_field& h : headers) {
        bytes_.append(h.name);
        bytes_.append(h.value);
        lengths_.emplace_back(static_cast<std::uint32_t>(h.name.size()), static_cast<std::uint32_t>(h.value.size()));
    }
}

bool environ_template::same_connection(const http::request& req, const request_facts& f) const noexcept {
    return remote == req.remote && local == req.local && version == req.version && https == f.https &&
           (!https || (server_port == f.server_port && server_name == f.server_name));
}

void environ_template::reset(const http::request& req, const request_facts& f) {
    remote = req.remote;
    local = req.local;
    version = req.version;
    https = f.https;
    server_name = f.https ? f.server_name : std::string();
    server_port = f.https ? f.server_port : 0;
    dict = python::py_ref();
    method = path = query = uri = nullptr;
}

environ_templates::environ_templates(std::size_t sets, std::size_t ways)
    : sets_(sets ? sets : 1), ways_(ways ? ways : 1), slots_(sets_ * ways_) {}

environ_template& environ_templates::slot_for(const http::request& req, const request_facts& f) {
    // Client ports spread connections of one client over the sets.
    const std::size_t h = (req.remote.port() * std::size_t{0x9E3779B1}) ^ (address_hash(req.remote.address()) * 31) ^
                          req.local.port();
    environ_template* set = &slots_[((h >> 7) ^ h) % sets_ * ways_];
    environ_template* victim = set;
    ++clock_;
    for (std::size_t i = 0; i < ways_; ++i) {
        environ_template& t = set[i];
        if (t.last_use != 0 && t.same_connection(req, f)) {
            t.last_use = clock_;
            return t;
        }
        if (t.last_use < victim->last_use) victim = &t;
    }
    victim->reset(req, f);
    victim->last_use = clock_;
    return *victim;
}

}  // namespace m0::wsgi
