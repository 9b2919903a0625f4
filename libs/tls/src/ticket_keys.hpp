#pragma once
// Session ticket keys that every serving process derives alike: from the
// deployment's secret (made once, before any fork) and the rotation period
// of the current time, so a ticket one process issued resumes on another,
// and keys change every period without any process telling the others.
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <utility>

#include <openssl/kdf.h>
#include <openssl/ssl.h>

#include "openssl_handles.hpp"

namespace m0::tls::detail {

struct ticket_key {
    std::array<std::uint8_t, 16> name;  // sent in the clear in the ticket: which key sealed it
    std::array<std::uint8_t, 32> cipher_key;  // AES-256-CBC
    std::array<std::uint8_t, 32> mac_key;     // HMAC-SHA256
};

class ticket_keys {
public:
    ticket_keys(const std::array<std::uint8_t, 32>& secret, std::chrono::seconds rotation);

    // The key of rotation period `period` (floor(unix time / rotation)).
    ticket_key derive(std::int64_t period) const;
    // The same, derived once per period: a handshake seals two tickets and
    // may open one, and three HKDF derivations would cost it more than
    // the sealing.
    ticket_key key_of(std::int64_t period) const;
    std::int64_t current_period() const;

    // SSL_CTX_set_tlsext_ticket_key_evp_cb's contract: seals new tickets
    // with the current period's key; opens those of the current period (1)
    // or of the previous one (2: the client gets a new ticket), refuses any
    // other (0: a full handshake).
    int seal_or_open(unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac,
                     bool seal) const;

private:
    std::array<std::uint8_t, 32> secret_;
    std::chrono::seconds rotation_;
    // Fetched once: a provider lookup per handshake would cost more than the
    // derivation itself.
    std::unique_ptr<EVP_KDF, openssl_free<EVP_KDF_free>> hkdf_;
    // Fetched once too: EVP_aes_256_cbc() would make every ticket fetch it.
    std::unique_ptr<EVP_CIPHER, openssl_free<EVP_CIPHER_free>> aes_;
    // The keys of the two periods derived last (every reactor thread seals
    // and opens tickets: a mutex held for a copy).
    mutable std::mutex cache_mutex_;
    mutable std::array<std::pair<std::int64_t, ticket_key>, 2> cache_{
        {{std::numeric_limits<std::int64_t>::min(), {}}, {std::numeric_limits<std::int64_t>::min(), {}}}};
};

}  // namespace m0::tls::detail
