#include "certificate_checks.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

namespace m0::tls::detail {
namespace {

// A certificate that expires sooner than this is worth a warning at every
// start and every --check: enough time to renew it.
constexpr int expiry_warning_days = 14;

std::string quoted(const std::string& key, const std::string& path) { return key + " '" + path + "'"; }

// The whole file, or nullopt with `why` set.
std::optional<std::string> read_file(const std::string& path, std::string& why) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        why = std::strerror(errno);
        return std::nullopt;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        why = std::strerror(errno);
        return std::nullopt;
    }
    return text;
}

// A memory BIO over `text` (which must outlive it), or null with an error.
bio_ptr open_pem(const std::string& key, const std::string& path, std::string& text, load_report& report) {
    std::string why;
    auto content = read_file(path, why);
    if (!content) {
        report.errors.push_back(quoted(key, path) + ": cannot read the file: " + why);
        return nullptr;
    }
    text = std::move(*content);
    return bio_ptr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string subject_of(X509* cert) {
    bio_ptr out(BIO_new(BIO_s_mem()));
    X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    const long size = BIO_get_mem_data(out.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
}

std::string date_of(const ASN1_TIME* t) {
    std::tm tm{};
    if (!ASN1_TIME_to_tm(t, &tm)) return "an unreadable date";
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return text;
}

// "certificate 2 of 3 (CN=Intermediate)": how messages point into a chain.
std::string describe(const std::vector<x509_ptr>& chain, std::size_t i) {
    if (chain.size() == 1) return "the certificate (" + subject_of(chain[i].get()) + ")";
    return "certificate " + std::to_string(i + 1) + " of " + std::to_string(chain.size()) + " (" +
           subject_of(chain[i].get()) + ")";
}

// Each certificate must be issued by the one after it, as a client reads the
// chain the server sends; the last may be issued by a CA the client has.
// False when not.
bool check_order(const std::string& where, const std::vector<x509_ptr>& chain, load_report& report) {
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
        if (X509_check_issued(chain[i + 1].get(), chain[i].get()) == X509_V_OK) continue;
        report.errors.push_back(where + ": the chain is out of order: " + describe(chain, i) +
                                " is not issued by " + describe(chain, i + 1) +
                                " (put the server's certificate first, then each issuer after what it signed)");
        return false;
    }
    return true;
}

void check_dates(const std::string& where, const std::vector<x509_ptr>& chain, load_report& report) {
    const std::time_t soon = std::time(nullptr) + expiry_warning_days * 24 * 3600;
    for (std::size_t i = 0; i < chain.size(); ++i) {
        const ASN1_TIME* not_before = X509_get0_notBefore(chain[i].get());
        const ASN1_TIME* not_after = X509_get0_notAfter(chain[i].get());
        if (X509_cmp_current_time(not_before) > 0)
            report.errors.push_back(where + ": " + describe(chain, i) + " is not valid before " + date_of(not_before));
        else if (X509_cmp_current_time(not_after) < 0)
            report.errors.push_back(where + ": " + describe(chain, i) + " expired on " + date_of(not_after));
        else if (X509_cmp_time(not_after, const_cast<std::time_t*>(&soon)) < 0)
            report.warnings.push_back(where + ": " + describe(chain, i) + " expires on " + date_of(not_after) +
                                      ", within " + std::to_string(expiry_warning_days) + " days");
    }
}

std::vector<std::string> dns_names(X509* cert) {
    std::vector<std::string> out;
    auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
    if (!names) return out;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
        const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
        if (name->type != GEN_DNS) continue;
        const ASN1_IA5STRING* dns = name->d.dNSName;
        out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                         static_cast<std::size_t>(ASN1_STRING_length(dns)));
    }
    GENERAL_NAMES_free(names);
    return out;
}

// What the key's password callback is given, and what it tells after.
struct password_request {
    const std::string* password = nullptr;  // null: none configured
    bool asked = false;                     // the key is encrypted
};

// OpenSSL asks for the password only when the key is encrypted; without one
// configured it gets none (and never prompts on a terminal).
int give_password(char* buf, int size, int, void* user) {
    auto* request = static_cast<password_request*>(user);
    request->asked = true;
    if (!request->password || static_cast<int>(request->password->size()) > size) return -1;
    std::memcpy(buf, request->password->data(), request->password->size());
    return static_cast<int>(request->password->size());
}

// tls.password, or the first line of tls.password_file; nullopt with an
// error when that file cannot be read. `none` when neither is set.
std::optional<std::string> password_of(const certificate_files& files, const std::string& key_prefix, bool& none,
                                       load_report& report) {
    none = false;
    if (!files.password.empty()) return files.password;
    if (files.password_file.empty()) {
        none = true;
        return std::string();
    }
    std::string why;
    auto text = read_file(files.password_file, why);
    if (!text) {
        report.errors.push_back(quoted(key_prefix + ".password_file", files.password_file) +
                                ": cannot read the file: " + why);
        return std::nullopt;
    }
    const auto end = text->find_first_of("\r\n");
    return text->substr(0, end);
}

pkey_ptr read_key(const certificate_files& files, const std::string& key_prefix, load_report& report) {
    const std::string where = quoted(key_prefix + ".key", files.key);
    bool none = false;
    const auto password = password_of(files, key_prefix, none, report);
    if (!password) return nullptr;
    std::string text;
    const auto in = open_pem(key_prefix + ".key", files.key, text, report);
    if (!in) return nullptr;
    password_request request{none ? nullptr : &*password};
    ERR_clear_error();
    pkey_ptr key(PEM_read_bio_PrivateKey(in.get(), nullptr, give_password, &request));
    if (key) return key;
    const std::string reason = openssl_reason();
    if (request.asked && none)
        report.errors.push_back(where + ": the key is encrypted: set " + key_prefix + ".password or " + key_prefix +
                                ".password_file");
    else if (request.asked)
        report.errors.push_back(where + ": cannot decrypt the key: wrong password (" +
                                (files.password.empty() ? quoted(key_prefix + ".password_file", files.password_file)
                                                        : key_prefix + ".password") +
                                "; " + reason + ")");
    else
        report.errors.push_back(where + ": no private key in it (expected PEM: PKCS#1, PKCS#8 or SEC1)");
    return nullptr;
}

// Every PEM object of one kind in a file, in order (`Read` is OpenSSL's
// PEM_read_bio_X509 and the like); empty, with an error, when the file
// cannot be read or holds none.
template <class Pointer, auto Read>
std::vector<Pointer> read_all(const std::string& key, const std::string& path, const char* what,
                              const char* pem_label, load_report& report) {
    std::vector<Pointer> out;
    std::string text;
    const auto in = open_pem(key, path, text, report);
    if (!in) return out;
    while (auto* object = Read(in.get(), nullptr, nullptr, nullptr)) out.emplace_back(object);
    ERR_clear_error();  // the end of the file reads as "no start line"
    if (out.empty())
        report.errors.push_back(quoted(key, path) + ": no " + what + " in it (expected PEM '-----BEGIN " + pem_label +
                                "-----')");
    return out;
}

}  // namespace

std::string openssl_reason() {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) return "unknown reason";
    const char* reason = ERR_reason_error_string(code);
    return reason ? reason : "error " + std::to_string(ERR_GET_REASON(code));
}

std::vector<x509_ptr> read_certificates(const std::string& key, const std::string& path, load_report& report) {
    return read_all<x509_ptr, PEM_read_bio_X509>(key, path, "certificate", "CERTIFICATE", report);
}

std::vector<x509_crl_ptr> read_crls(const std::string& key, const std::string& path, load_report& report) {
    return read_all<x509_crl_ptr, PEM_read_bio_X509_CRL>(key, path, "CRL", "X509 CRL", report);
}

std::optional<loaded_chain> load_chain(const certificate_files& files, const std::string& key_prefix,
                                       load_report& report) {
    const std::size_t errors_before = report.errors.size();
    if (files.cert.empty()) report.errors.push_back(key_prefix + ".cert: required: the PEM certificate chain");
    if (files.key.empty()) report.errors.push_back(key_prefix + ".key: required: the PEM private key");
    if (report.errors.size() > errors_before) return std::nullopt;

    loaded_chain chain;
    const std::string where = quoted(key_prefix + ".cert", files.cert);
    chain.certificates = read_certificates(key_prefix + ".cert", files.cert, report);
    chain.key = read_key(files, key_prefix, report);
    if (chain.certificates.empty()) return std::nullopt;
    // Out of order, the first certificate may not be the server's: its key
    // would not match it either, which says nothing more.
    const bool in_order = check_order(where, chain.certificates, report);
    check_dates(where, chain.certificates, report);
    chain.names = files.names.empty() ? dns_names(chain.certificates.front().get()) : files.names;
    if (in_order && chain.key && !X509_check_private_key(chain.certificates.front().get(), chain.key.get())) {
        ERR_clear_error();
        report.errors.push_back(quoted(key_prefix + ".key", files.key) + " does not match the certificate in " + where);
    }
    if (report.errors.size() > errors_before) return std::nullopt;
    return chain;
}

bool host_matches(std::string_view pattern, std::string_view host) {
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    const auto same = [](std::string_view a, std::string_view b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
                return false;
        return true;
    };
    if (pattern.size() > 2 && pattern.substr(0, 2) == "*.") {
        const std::string_view suffix = pattern.substr(1);  // ".example.com"
        if (host.size() <= suffix.size()) return false;
        const std::string_view label = host.substr(0, host.size() - suffix.size());
        return label.find('.') == std::string_view::npos && same(host.substr(label.size()), suffix);
    }
    return same(pattern, host);
}

}  // namespace m0::tls::detail
