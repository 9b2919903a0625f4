#pragma once
// The `tls:` section (libs/tls/README.md): certificate chains, client
// authentication, versions and ciphers, session tickets, as the plain
// settings libs/tls builds its OpenSSL contexts from.
#include <string>

#include <m0/config.hpp>
#include <m0/tls/settings.hpp>

namespace m0 {

// Each key is checked on its own, its errors added to `errors`; paths are
// resolved against the config file's directory (and --check prints them
// so; never a password). Makes the deployment's session ticket secret: this
// runs once per deployment, before any fork, so every serving process
// shares it.
tls::settings parse_tls_config(const config_node& tls, config_errors& errors);

// The node of the key an error of libs/tls starts with ("tls.sni[1].key
// 'b.key' does not match..."), so that the error points at its line; `tls`
// itself when the error names no key of it.
config_node tls_key_named_by(const config_node& tls, const std::string& error);

}  // namespace m0
