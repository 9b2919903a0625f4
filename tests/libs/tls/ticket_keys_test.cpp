// The ticket keys every serving process derives alike: the same secret and
// period give the same key, and a ticket of the previous period is opened
// and renewed, an older one refused.
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "openssl_handles.hpp"
#include "ticket_keys.hpp"

namespace m0::tls::detail {
namespace {

using mac_ptr = std::unique_ptr<EVP_MAC_CTX, openssl_free<EVP_MAC_CTX_free>>;
using cipher_ptr = std::unique_ptr<EVP_CIPHER_CTX, openssl_free<EVP_CIPHER_CTX_free>>;

constexpr std::chrono::hours rotation{1};

std::array<std::uint8_t, 32> secret_of(std::uint8_t fill) {
    std::array<std::uint8_t, 32> secret;
    secret.fill(fill);
    return secret;
}

// What OpenSSL's ticket callback returns for a ticket sealed under `key`.
int open_ticket(const ticket_keys& keys, const ticket_key& key) {
    EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    mac_ptr mac(EVP_MAC_CTX_new(hmac));
    EVP_MAC_free(hmac);
    cipher_ptr cipher(EVP_CIPHER_CTX_new());
    std::array<unsigned char, 16> name;
    std::copy(key.name.begin(), key.name.end(), name.begin());
    std::array<unsigned char, EVP_MAX_IV_LENGTH> iv{};
    return keys.seal_or_open(name.data(), iv.data(), cipher.get(), mac.get(), false);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ticket_keys_derivation)

BOOST_AUTO_TEST_CASE(the_same_secret_and_period_give_the_same_key_and_nothing_else_does) {
    const ticket_keys one(secret_of(1), rotation), again(secret_of(1), rotation), other(secret_of(2), rotation);
    const auto period = one.current_period();
    BOOST_TEST(one.derive(period).name == again.derive(period).name);
    BOOST_TEST(one.derive(period).cipher_key == again.derive(period).cipher_key);
    BOOST_TEST(one.derive(period).mac_key == again.derive(period).mac_key);
    BOOST_TEST(one.derive(period).name != other.derive(period).name);
    BOOST_TEST(one.derive(period).name != one.derive(period + 1).name);
    BOOST_TEST(one.derive(period).cipher_key != one.derive(period).mac_key);
}

BOOST_AUTO_TEST_CASE(a_ticket_of_this_period_opens_of_the_previous_one_renews_and_older_is_refused) {
    const ticket_keys keys(secret_of(1), rotation);
    const auto period = keys.current_period();
    BOOST_TEST(open_ticket(keys, keys.derive(period)) == 1);
    BOOST_TEST(open_ticket(keys, keys.derive(period - 1)) == 2);
    BOOST_TEST(open_ticket(keys, keys.derive(period - 2)) == 0);
    BOOST_TEST(open_ticket(keys, ticket_keys(secret_of(2), rotation).derive(period)) == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace m0::tls::detail
