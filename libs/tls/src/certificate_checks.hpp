#pragma once
// Reading the PEM files of a `tls:` section and the checks that refuse a
// chain before anything serves with it: every error names the config key,
// the file and why.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <m0/tls/server_context.hpp>
#include <m0/tls/settings.hpp>

#include "openssl_handles.hpp"

namespace m0::tls::detail {

// One chain's files, read and checked.
struct loaded_chain {
    std::vector<x509_ptr> certificates;  // the leaf first, then each one's issuer
    pkey_ptr key;
    std::vector<std::string> names;  // SNI: as configured, else the leaf's subjectAltName DNS names
};

// `key_prefix` is how messages name the chain's keys: "tls" or "tls.sni[1]".
// Null when anything failed (each failure added to report.errors); a
// certificate close to expiry adds a warning.
std::optional<loaded_chain> load_chain(const certificate_files& files, const std::string& key_prefix,
                                       load_report& report);

// Every certificate of a PEM file (`key` names the setting in errors);
// empty, with an error, when the file cannot be read or holds none.
std::vector<x509_ptr> read_certificates(const std::string& key, const std::string& path, load_report& report);
// Every CRL of a PEM file, the same way.
std::vector<x509_crl_ptr> read_crls(const std::string& key, const std::string& path, load_report& report);

// The reason of the oldest error OpenSSL queued on this thread ("bad
// decrypt"), or "unknown reason"; empties the queue.
std::string openssl_reason();

// Whether `host` (as a client sent it by SNI) is what `pattern` names:
// the same name, or "*.example.com" for exactly one more label.
// Case-insensitive; a trailing dot on the host is ignored.
bool host_matches(std::string_view pattern, std::string_view host);

}  // namespace m0::tls::detail
