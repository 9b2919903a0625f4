// Finding the environ template a request may share and checking its headers.
#include "environ_templates.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include "wsgi_environ.hpp"

namespace m0::wsgi {

namespace {

// memcmp must not get a null pointer, which an empty view may have.
bool same_bytes(const char* p, std::string_view v) noexcept {
    return v.empty() || std::memcmp(p, v.data(), v.size()) == 0;
}

std::size_t address_hash(const boost::asio::ip::address& a) noexcept {
    if (a.is_v4()) return a.to_v4().to_uint();
    const auto bytes = a.to_v6().to_bytes();
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// A cheap hash of the header fields (their lengths and the last bytes of
// each value, where a cookie or a token differs), only to pick a set and a
// tag: header_signature::matches compares every byte.
std::uint64_t headers_hash(const std::vector<http::header_field>& headers) noexcept {
    std::uint64_t h = headers.size();
    for (const http::header_field& f : headers) {
        std::uint64_t tail = 0;
        const std::size_t n = std::min<std::size_t>(f.value.size(), sizeof tail);
        if (n) std::memcpy(&tail, f.value.data() + f.value.size() - n, n);
        h = (h ^ (std::uint64_t{f.name.size()} << 32 | f.value.size())) * 0x9E3779B97F4A7C15;
        h = (h ^ tail) * 0xC2B2AE3D27D4EB4F;
    }
    return h;
}

}  // namespace

bool header_signature::matches(const std::vector<http::header_field>& headers) const noexcept {
    if (headers.size() != count_) return false;
    const char* p = bytes_.data();
    for (const http::header_field& h : headers) {
        std::uint32_t name_len = 0, value_len = 0;
        std::memcpy(&name_len, p, 4);
        std::memcpy(&value_len, p + 4, 4);
        p += 8;
        if (h.name.size() != name_len || h.value.size() != value_len || !same_bytes(p, h.name) ||
            !same_bytes(p + name_len, h.value))
            return false;
        p += name_len + value_len;
    }
    return true;
}

void header_signature::assign(const std::vector<http::header_field>& headers) {
    bytes_.clear();
    for (const http::header_field& h : headers) {
        const std::uint32_t lengths[2] = {static_cast<std::uint32_t>(h.name.size()),
                                          static_cast<std::uint32_t>(h.value.size())};
        bytes_.append(reinterpret_cast<const char*>(lengths), sizeof lengths);
        bytes_.append(h.name);
        bytes_.append(h.value);
    }
    count_ = headers.size();
}

bool environ_template::serves(const http::request& req, const request_facts& f) const noexcept {
    return remote == req.remote.address() && remote_port == (req.remote.port() != 0) && local == req.local &&
           version == req.version && https == f.https &&
           (!https || (server_port == f.server_port && server_name == f.server_name)) && headers.matches(req.headers);
}

void environ_template::reset(const http::request& req, const request_facts& f) {
    remote = req.remote.address();
    remote_port = req.remote.port() != 0;
    local = req.local;
    version = req.version;
    https = f.https;
    server_name = f.https ? f.server_name : std::string();
    server_port = f.https ? f.server_port : 0;
    headers.assign(req.headers);
    dict = python::py_ref();
    method = path = query = uri = nullptr;
}

environ_templates::environ_templates(std::size_t sets, std::size_t ways)
    : sets_(sets ? sets : 1), ways_(ways ? ways : 1), ways_of_(sets_ * ways_), slots_(sets_ * ways_) {}

environ_template& environ_templates::slot_for(const http::request& req, const request_facts& f) {
    std::uint64_t h = headers_hash(req.headers) ^
                      (address_hash(req.remote.address()) * std::uint64_t{0xC2B2AE3D27D4EB4F}) ^
                      (req.local.port() * std::uint64_t{0x165667B19E3779F9});
    h ^= h >> 29;
    h |= 1;  // 0 marks an unused slot
    const std::size_t first = (h >> 1) % sets_ * ways_;
    std::size_t victim = first;
    ++clock_;
    for (std::size_t i = first; i < first + ways_; ++i) {
        way& w = ways_of_[i];
        if (w.tag == h && slots_[i].serves(req, f)) {
            w.last_use = clock_;
            return slots_[i];
        }
        if (w.last_use < ways_of_[victim].last_use) victim = i;
    }
    ways_of_[victim] = {h, clock_};
    slots_[victim].reset(req, f);
    return slots_[victim];
}

}  // namespace m0::wsgi
