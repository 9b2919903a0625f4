#include "config/tls_config.hpp"

#include <openssl/rand.h>
#include <openssl/ssl.h>

#include <filesystem>
#include <optional>
#include <stdexcept>

namespace m0 {
namespace {

// What --check prints in place of a password.
constexpr const char* hidden_password = "(set, not shown)";

// A path key: relative to the directory of the config file that sets it;
// absent: empty.
std::string path_of(const config_node& section, std::string_view key) {
    const auto text = section.optional_string(key);
    if (!text) return {};
    if (text->empty()) section.fail(key, "expected a file path, found an empty string");
    const std::filesystem::path base = section.child(key).base_dir();
    const std::string path = (base / *text).lexically_normal().string();
    section.set_effective(key, path);  // --check prints a config valid from anywhere
    return path;
}

// cert, key, password, password_file (and names, for an SNI chain).
tls::certificate_files parse_certificate_files(const config_node& section, bool sni, config_errors& errors) {
    tls::certificate_files out;
    errors.check([&] {
        out.cert = path_of(section, "cert");
        if (out.cert.empty())
            section.fail("cert", "required: the PEM file of the certificate chain (the server's certificate first)");
    });
    errors.check([&] {
        out.key = path_of(section, "key");
        if (out.key.empty()) section.fail("key", "required: the PEM file of the certificate's private key");
    });
    errors.check([&] {
        out.password = section.optional_string("password").value_or("");
        if (section.has("password")) section.set_effective("password", hidden_password);
        out.password_file = path_of(section, "password_file");
        if (!out.password.empty() && !out.password_file.empty())
            section.fail("password_file", "set either password or password_file, not both");
    });
    if (sni) errors.check([&] { out.names = section.string_list("names", {}); });
    return out;
}

std::uint16_t protocol_version(const std::string& text) {
    return text == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
}

tls::client_auth client_auth_of(const std::string& text) {
    if (text == "required") return tls::client_auth::required;
    if (text == "optional") return tls::client_auth::optional;
    return tls::client_auth::none;
}

}  // namespace

tls::settings parse_tls_config(const config_node& tls, config_errors& errors) {
    tls::settings out;
    if (!errors.check([&] {
            if (!tls.is_map()) tls.fail("", "expected a map with at least 'cert' and 'key'");
        }))
        return out;
    errors.check([&] {
        tls.allow_keys({"cert", "key", "password", "password_file", "client_auth", "ca", "crl", "min_version", "ciphers",
                        "ciphersuites", "session_tickets", "ticket_rotation", "handshake_timeout", "sni"});
    });
    out.certificate = parse_certificate_files(tls, false, errors);
    errors.check([&] {
        out.client_auth = client_auth_of(tls.one_of("client_auth", "none", {"none", "optional", "required"}));
    });
    errors.check([&] { out.ca = path_of(tls, "ca"); });
    errors.check([&] { out.crl = path_of(tls, "crl"); });
    errors.check([&] { out.min_version = protocol_version(tls.one_of("min_version", "1.2", {"1.2", "1.3"})); });
    errors.check([&] { out.ciphers = tls.string("ciphers", tls::intermediate_ciphers); });
    errors.check([&] { out.ciphersuites = tls.string("ciphersuites", OSSL_default_ciphersuites()); });
    errors.check([&] { out.session_tickets = tls.boolean("session_tickets", true); });
    errors.check([&] {
        const auto rotation = tls.duration("ticket_rotation", out.ticket_rotation);
        if (rotation < std::chrono::seconds(1))
            tls.fail("ticket_rotation", "expected at least 1s (a ticket is accepted for two periods of this)");
        out.ticket_rotation = std::chrono::duration_cast<std::chrono::seconds>(rotation);
    });
    errors.check([&] {
        const auto timeout = tls.duration("handshake_timeout", out.handshake_timeout);
        if (timeout <= std::chrono::nanoseconds::zero())
            tls.fail("handshake_timeout",
                     "expected a duration above 0 (a client gets this long to finish the handshake)");
        out.handshake_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    });
    errors.check([&] {
        const auto sni = tls.child("sni");
        if (!sni.present()) return;
        for (const auto& entry : sni.items()) {
            if (!entry.is_map()) entry.fail("", "expected a map with 'cert', 'key' and optionally 'names'");
            entry.allow_keys({"cert", "key", "password", "password_file", "names"});
            out.sni.push_back(parse_certificate_files(entry, true, errors));
        }
    });
    if (RAND_bytes(out.ticket_secret.data(), static_cast<int>(out.ticket_secret.size())) != 1)
        throw std::runtime_error("tls: OpenSSL's random generator failed to make the session ticket secret");
    return out;
}

config_node tls_key_named_by(const config_node& tls, const std::string& error) {
    config_node at = tls;
    const std::string key = error.substr(0, error.find_first_of(" :"));
    if (key.rfind("tls.", 0) != 0) return at;
    std::size_t start = 4;
    while (start < key.size()) {
        const std::size_t end = key.find('.', start);
        std::string part = key.substr(start, end == std::string::npos ? std::string::npos : end - start);
        std::optional<std::size_t> index;
        if (const auto open = part.find('['); open != std::string::npos) {
            index = std::stoul(part.substr(open + 1));
            part.resize(open);
        }
        if (!at.has(part)) return at;
        at = at.child(part);
        if (index) {
            const auto items = at.is_sequence() ? at.items() : std::vector<config_node>{};
            if (*index >= items.size()) return at;
            at = items[*index];
        }
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return at;
}

}  // namespace m0
