#include "ticket_keys.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace m0::tls::detail {
namespace {

// Tells these keys from anything else ever derived from the same secret.
constexpr char derivation_salt[] = "m0 tls session ticket keys";

template <class T>
T* param_pointer(const T* p) {
    return const_cast<T*>(p);  // OSSL_PARAM's constructors take non-const pointers they only read
}

}  // namespace

ticket_keys::ticket_keys(const std::array<std::uint8_t, 32>& secret, std::chrono::seconds rotation)
    : secret_(secret),
      rotation_(std::max(rotation, std::chrono::seconds(1))),
      hkdf_(EVP_KDF_fetch(nullptr, "HKDF", nullptr)),
      aes_(EVP_CIPHER_fetch(nullptr, "AES-256-CBC", nullptr)) {
    if (!hkdf_) throw std::runtime_error("HKDF is not available in this OpenSSL");
    if (!aes_) throw std::runtime_error("AES-256-CBC is not available in this OpenSSL");
}

std::int64_t ticket_keys::current_period() const {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch());
    return now.count() / rotation_.count();
}

// HKDF-SHA256(secret, salt, "period N") gives name, cipher key and MAC key.
ticket_key ticket_keys::derive(std::int64_t period) const {
    ticket_key out{};
    std::array<std::uint8_t, sizeof out.name + sizeof out.cipher_key + sizeof out.mac_key> material{};
    const std::string info = "period " + std::to_string(period);
    EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(hkdf_.get());
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, param_pointer("SHA256"), 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, param_pointer(secret_.data()), secret_.size()),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, param_pointer(derivation_salt),
                                          sizeof derivation_salt - 1),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, param_pointer(info.data()), info.size()),
        OSSL_PARAM_construct_end(),
    };
    const bool ok = ctx && EVP_KDF_derive(ctx, material.data(), material.size(), params) == 1;
    EVP_KDF_CTX_free(ctx);
    if (!ok) throw std::runtime_error("HKDF-SHA256 failed to derive a session ticket key");
    const std::uint8_t* at = material.data();
    std::memcpy(out.name.data(), at, out.name.size());
    std::memcpy(out.cipher_key.data(), at += out.name.size(), out.cipher_key.size());
    std::memcpy(out.mac_key.data(), at + out.cipher_key.size(), out.mac_key.size());
    return out;
}

ticket_key ticket_keys::key_of(std::int64_t period) const {
    std::lock_guard lock(cache_mutex_);
    for (const auto& [p, key] : cache_)
        if (p == period) return key;
    // Replace the older of the two: the current and the previous period stay.
    auto& slot = cache_[0].first < cache_[1].first ? cache_[0] : cache_[1];
    slot = {period, derive(period)};
    return slot.second;
}

int ticket_keys::seal_or_open(unsigned char name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac,
                              bool seal) const {
    const std::int64_t period = current_period();
    ticket_key key;
    int found = 1;
    if (seal) {
        key = key_of(period);
        std::memcpy(name, key.name.data(), key.name.size());
        if (RAND_bytes(iv, EVP_CIPHER_get_iv_length(aes_.get())) != 1) return -1;
    } else {
        key = key_of(period);
        if (std::memcmp(name, key.name.data(), key.name.size()) != 0) {
            key = key_of(period - 1);
            if (std::memcmp(name, key.name.data(), key.name.size()) != 0) return 0;
            found = 2;
        }
    }
    const OSSL_PARAM mac_params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.mac_key.data(), key.mac_key.size()),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, param_pointer("SHA256"), 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_CTX_set_params(mac, mac_params) != 1) return -1;
    const int ok = seal ? EVP_EncryptInit_ex(cipher, aes_.get(), nullptr, key.cipher_key.data(), iv)
                        : EVP_DecryptInit_ex(cipher, aes_.get(), nullptr, key.cipher_key.data(), iv);
    return ok == 1 ? found : -1;
}

}  // namespace m0::tls::detail
