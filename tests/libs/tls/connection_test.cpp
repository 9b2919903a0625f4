// tls::connection over real sockets: a non-blocking AF_UNIX socket pair, a
// tls::connection on the server's end and an OpenSSL client on the other,
// both driven by one poll() loop until each is done. What the engine relies
// on: want_write and the retry with the same bytes, reads into a small
// buffer while OpenSSL holds records it read ahead, bytes handed over by
// prepend_input, why a handshake failed, info(), the end of a stream; and
// one server_context shared by several threads (run under ThreadSanitizer).
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>

#include <openssl/err.h>
#include <openssl/evp.h>

#include <m0/tls/connection.hpp>
#include <m0/tls/server_context.hpp>

#include "test_certificates.hpp"

namespace m0::tls {

// For Boost.Test's messages (found by argument-dependent lookup).
std::ostream& operator<<(std::ostream& out, handshake_failure f) { return out << to_string(f); }
std::ostream& operator<<(std::ostream& out, connection::status s) {
    constexpr const char* names[] = {"done", "want_read", "want_write", "closed", "failed"};
    return out << names[static_cast<int>(s)];
}

namespace {

using detail::ssl_ctx_ptr;
using detail::ssl_ptr;
using test::pki;
using test::temp_dir;
using test::write_chain;
using status = connection::status;
using session_ptr = std::unique_ptr<SSL_SESSION, detail::openssl_free<SSL_SESSION_free>>;

// The OpenSSL client writes with write(): one to a socket the server closed
// must fail with EPIPE, not end the test binary.
[[maybe_unused]] const bool sigpipe_ignored = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
}();

struct socket_pair {
    int server = -1;
    int client = -1;
    socket_pair() {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0)
            server = fds[0], client = fds[1];
    }
    ~socket_pair() {
        close_client();
        if (server >= 0) ::close(server);
    }
    socket_pair(const socket_pair&) = delete;
    socket_pair& operator=(const socket_pair&) = delete;
    void close_client() {
        if (client >= 0) ::close(client);
        client = -1;
    }
    // Kernel buffers of a few KiB: a large response cannot go in one write.
    void shrink_buffers(int bytes) {
        for (const int fd : {server, client})
            for (const int option : {SO_SNDBUF, SO_RCVBUF}) ::setsockopt(fd, SOL_SOCKET, option, &bytes, sizeof bytes);
    }
};

// What one side needs next: nothing (done), its socket readable or writable,
// or (events 0) to be called again at once.
struct step {
    bool done = false;
    short events = 0;
};

short events_of(status s) { return s == status::want_write ? POLLOUT : POLLIN; }

// After an OpenSSL client call that did not succeed.
step waiting(SSL* ssl, int rc, bool& failed) {
    switch (SSL_get_error(ssl, rc)) {
        case SSL_ERROR_WANT_READ: return {false, POLLIN};
        case SSL_ERROR_WANT_WRITE: return {false, POLLOUT};
        default: failed = true; ERR_clear_error(); return {true};
    }
}

// Calls each side when its socket is ready (or it asked to be called again)
// until both are done. False when neither can go on: a stall. No Boost.Test
// macro here or below: the stress calls it from several threads.
bool run(int server_fd, const std::function<step()>& server, int client_fd, const std::function<step()>& client) {
    struct side {
        int fd;
        const std::function<step()>& next;
        step now{};
        bool due = true;
    };
    side sides[2] = {{server_fd, server}, {client_fd, client}};
    for (;;) {
        for (auto& s : sides)
            if (!s.now.done && s.due) s.now = s.next();
        if (sides[0].now.done && sides[1].now.done) return true;
        pollfd fds[2];
        bool busy = false;
        for (int i = 0; i < 2; ++i) {
            const step& now = sides[i].now;
            fds[i] = {now.done ? -1 : sides[i].fd, now.events, 0};
            busy = busy || (!now.done && now.events == 0);
        }
        if (::poll(fds, 2, busy ? 0 : 10'000) == 0 && !busy) return false;
        for (int i = 0; i < 2; ++i) sides[i].due = sides[i].now.events == 0 || fds[i].revents != 0;
    }
}

const std::function<step()> nothing_to_do = [] { return step{true}; };

struct client_options {
    std::string server_name = "a.example";  // empty: no SNI
    bool offer_http_1_1 = true;             // ALPN
    SSL_SESSION* session = nullptr;         // to resume
    int max_version = TLS1_3_VERSION;
    std::string ciphers{};                  // TLS 1.2; empty: OpenSSL's
    const test::identity* certificate = nullptr;
    bool verify_server = false;  // against an empty trust store: refuses any server
};

struct tls_client {
    ssl_ctx_ptr context;
    ssl_ptr ssl;
    tls_client(int fd, const client_options& o) : context(SSL_CTX_new(TLS_client_method())) {
        SSL_CTX* c = context.get();
        if (o.max_version < TLS1_2_VERSION) {
            // Debian's openssl.cnf refuses anything older than TLS 1.2.
            SSL_CTX_set_security_level(c, 0);
            SSL_CTX_set_min_proto_version(c, TLS1_VERSION);
        }
        SSL_CTX_set_max_proto_version(c, o.max_version);
        if (!o.ciphers.empty()) SSL_CTX_set_cipher_list(c, o.ciphers.c_str());
        SSL_CTX_set_verify(c, o.verify_server ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
        if (o.certificate) {
            SSL_CTX_use_certificate(c, o.certificate->cert.get());
            SSL_CTX_use_PrivateKey(c, o.certificate->key.get());
        }
        ssl.reset(SSL_new(c));
        SSL_set_fd(ssl.get(), fd);
        SSL_set_connect_state(ssl.get());
        if (!o.server_name.empty()) SSL_set_tlsext_host_name(ssl.get(), o.server_name.c_str());
        if (o.offer_http_1_1) SSL_set_alpn_protos(ssl.get(), reinterpret_cast<const unsigned char*>("\x08http/1.1"), 9);
        if (o.session) SSL_set_session(ssl.get(), o.session);
    }
    ~tls_client() {
        // OpenSSL marks the session of an SSL freed without a shutdown not
        // resumable; a session taken from it must stay resumable.
        SSL_set_shutdown(ssl.get(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    }
};

step server_handshake_step(connection& tls) {
    const status s = tls.handshake();
    if (s == status::want_read || s == status::want_write) return {false, events_of(s)};
    return {true};
}

// The server's side of one exchange: the handshake, a request read up to its
// blank line, then `response` in slices through write(), retried after
// want_write with the same bytes.
struct server_side {
    connection& tls;
    const std::string& response;
    std::string request{};
    std::size_t sent = 0;
    int want_writes = 0;
    bool failed = false;
    std::size_t slice = 65536;
    bool close_notify = false;  // the response written with more_follows, then close_notify

    step operator()() {
        if (!tls.established()) {
            const status s = tls.handshake();
            if (s == status::failed) return failed = true, step{true};
            if (s != status::done) return {false, events_of(s)};
        }
        while (request.find("\r\n\r\n") == std::string::npos) {
            char buf[512];
            std::size_t n = 0;
            const status s = tls.read(buf, sizeof buf, n);
            if (s == status::done) request.append(buf, n);
            else if (s == status::want_read || s == status::want_write) return {false, events_of(s)};
            else return failed = true, step{true};
        }
        while (sent < response.size()) {
            std::size_t n = 0;
            const status s =
                tls.write(response.data() + sent, std::min(response.size() - sent, slice), n, close_notify);
            if (s == status::done) sent += n;
            else if (s == status::want_read || s == status::want_write) return ++want_writes, step{false, events_of(s)};
            else return failed = true, step{true};
        }
        if (close_notify && !tls.send_close_notify()) return {false, POLLOUT};
        return {true};
    }
};

struct client_side {
    SSL* ssl;
    std::string request;
    std::size_t response_size;
    std::size_t sent = 0;
    std::string response{};
    bool failed = false;

    step operator()() {
        if (!SSL_is_init_finished(ssl)) {
            const int rc = SSL_do_handshake(ssl);
            if (rc != 1) return waiting(ssl, rc, failed);
        }
        while (sent < request.size()) {
            std::size_t n = 0;
            if (SSL_write_ex(ssl, request.data() + sent, request.size() - sent, &n) != 1) return waiting(ssl, 0, failed);
            sent += n;
        }
        while (response.size() < response_size) {
            char buf[16384];
            std::size_t n = 0;
            if (SSL_read_ex(ssl, buf, sizeof buf, &n) != 1) return waiting(ssl, 0, failed);
            response.append(buf, n);
        }
        return {true};
    }
};

const std::string http_request = "GET /big HTTP/1.1\r\nHost: a.example\r\nUser-Agent: connection_test\r\n\r\n";

std::string random_bytes(std::size_t size, unsigned seed) {
    std::mt19937 random(seed);
    std::string out(size, '\0');
    for (auto& c : out) c = static_cast<char>(random());
    return out;
}

std::string sha256_hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
    std::string hex;
    for (unsigned i = 0; i < size; ++i) hex += "0123456789abcdef"[digest[i] >> 4], hex += "0123456789abcdef"[digest[i] & 15];
    return hex;
}

// One connection: the sockets, both ends, and one request and response.
struct conversation {
    socket_pair sockets;
    connection tls;
    tls_client client;
    std::string response;
    server_side server{tls, response};
    client_side client_end{client.ssl.get(), http_request, response.size()};

    conversation(const server_context& context, const client_options& options, std::string response_body)
        : tls(context, sockets.server), client(sockets.client, options), response(std::move(response_body)) {}

    // True when both ends did everything and the bytes arrived whole.
    bool run_to_end() {
        return run(sockets.server, std::ref(server), sockets.client, std::ref(client_end)) && !server.failed &&
               !client_end.failed && server.request == http_request && client_end.response == response;
    }
};

// The client's end after a response: its read says the stream ended by
// close_notify (rc 0, SSL_ERROR_ZERO_RETURN).
bool client_sees_close_notify(SSL* client, int client_fd) {
    int rc = 0, error = SSL_ERROR_NONE;
    const std::function<step()> client_reads = [&] {
        char buf[64];
        rc = SSL_read(client, buf, sizeof buf);
        error = SSL_get_error(client, rc);
        if (error == SSL_ERROR_WANT_READ) return step{false, POLLIN};
        return step{true};
    };
    return run(-1, nothing_to_do, client_fd, client_reads) && rc == 0 && error == SSL_ERROR_ZERO_RETURN;
}

// The server's read until it says the stream ended (or failed): its status.
status read_to_end(conversation& c) {
    status last = status::want_read;
    std::string extra;
    const std::function<step()> reader = [&] {
        char buf[256];
        std::size_t n = 0;
        last = c.tls.read(buf, sizeof buf, n);
        if (last == status::done) return extra.append(buf, n), step{false, 0};
        if (last == status::want_read || last == status::want_write) return step{false, events_of(last)};
        return step{true};
    };
    if (!run(c.sockets.server, reader, c.sockets.client, nothing_to_do)) return status::want_read;
    return last;
}

// One certificate chain (a.example), tickets on.
struct one_chain : test::chain_settings {
    void ask_for_client_certificates(client_auth mode) {
        s.client_auth = mode;
        s.ca = dir.write("ca.pem", test::pem_of(pki().ca.cert.get()) + test::pem_of(pki().intermediate.cert.get()));
    }
};

// The server's handshake against an OpenSSL client: why it failed.
handshake_failure failure_against(const server_context& context, const client_options& options) {
    socket_pair sockets;
    connection tls(context, sockets.server);
    tls_client client(sockets.client, options);
    bool client_failed = false;
    BOOST_REQUIRE(run(
        sockets.server, [&] { return server_handshake_step(tls); }, sockets.client,
        [&] {
            const int rc = SSL_do_handshake(client.ssl.get());
            return rc == 1 ? step{true} : waiting(client.ssl.get(), rc, client_failed);
        }));
    BOOST_TEST_MESSAGE(to_string(tls.failure()) << ": " << tls.failure_detail());
    return tls.failure();
}

// The server's handshake against a client that sends `bytes` and waits.
handshake_failure failure_against_bytes(const server_context& context, std::string_view bytes) {
    socket_pair sockets;
    connection tls(context, sockets.server);
    BOOST_REQUIRE(::send(sockets.client, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    BOOST_REQUIRE(run(sockets.server, [&] { return server_handshake_step(tls); }, sockets.client, nothing_to_do));
    BOOST_TEST_MESSAGE(to_string(tls.failure()) << ": " << tls.failure_detail());
    return tls.failure();
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(connection_over_sockets, one_chain)

BOOST_AUTO_TEST_CASE(a_multi_mib_response_arrives_whole_through_want_write_and_retries) {
    const auto server = load();
    conversation c(*server, {}, random_bytes(6 << 20, 1));
    c.sockets.shrink_buffers(4096);
    BOOST_TEST(c.run_to_end());
    BOOST_TEST(c.server.want_writes > 0);  // the contract was exercised
    BOOST_TEST(c.client_end.response.size() == c.response.size());
    BOOST_TEST(sha256_hex(c.client_end.response) == sha256_hex(c.response));
}

BOOST_AUTO_TEST_CASE(many_small_records_are_all_read_through_a_small_buffer) {
    const auto server = load();
    socket_pair sockets;
    connection tls(*server, sockets.server);
    tls_client client(sockets.client, {});

    // The client: 2000 records of one line each, written as fast as the socket takes them.
    std::string expected;
    std::size_t next_record = 0;
    bool client_failed = false;
    const std::function<step()> writer = [&] {
        SSL* ssl = client.ssl.get();
        if (!SSL_is_init_finished(ssl)) {
            const int rc = SSL_do_handshake(ssl);
            if (rc != 1) return waiting(ssl, rc, client_failed);
        }
        for (; next_record < 2000; ++next_record) {
            const std::string line = "record " + std::to_string(next_record) + "\n";
            std::size_t n = 0;
            if (SSL_write_ex(ssl, line.data(), line.size(), &n) != 1) return waiting(ssl, 0, client_failed);
            expected += line;
        }
        return step{true};
    };
    // The server, as the engine: one read per readiness, into 7 bytes; while
    // has_buffered_input() it reads again without waiting for the socket,
    // which may hold none of those bytes any more (read ahead by OpenSSL).
    std::string received;
    int held_records = 0;  // times whole records waited in OpenSSL, none in the socket
    bool server_failed = false;
    const std::function<step()> reader = [&] {
        if (!tls.established()) {
            const step s = server_handshake_step(tls);
            if (s.done && !tls.established()) server_failed = true;
            return s.done ? step{server_failed, 0} : s;
        }
        char buf[7];
        std::size_t n = 0;
        const status s = tls.read(buf, sizeof buf, n);
        if (s == status::want_read || s == status::want_write) return step{false, events_of(s)};
        if (s != status::done) return server_failed = true, step{true};
        received.append(buf, n);
        if (next_record == 2000 && received.size() == expected.size()) return step{true};
        if (!tls.has_buffered_input()) return step{false, POLLIN};
        char probe;
        if (SSL_pending(tls.native()) == 0 && ::recv(sockets.server, &probe, 1, MSG_PEEK | MSG_DONTWAIT) < 0)
            ++held_records;
        return step{false, 0};
    };
    BOOST_REQUIRE(run(sockets.server, reader, sockets.client, writer));
    BOOST_TEST(!client_failed);
    BOOST_TEST(!server_failed);
    BOOST_TEST(received.size() == expected.size());
    BOOST_TEST(received == expected);
    BOOST_TEST(held_records > 0);
}

BOOST_AUTO_TEST_CASE(a_client_hello_partly_read_before_goes_in_by_prepend_input) {
    const auto server = load();
    // A few bytes, most of it, all of it (then the socket starts empty).
    for (const std::size_t taken : {std::size_t(3), std::size_t(100), std::size_t(65536)}) {
        BOOST_TEST_CONTEXT("the first " << taken << " bytes read before") {
            conversation c(*server, {}, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            bool failed = false;
            const int rc = SSL_do_handshake(c.client.ssl.get());
            BOOST_REQUIRE(waiting(c.client.ssl.get(), rc, failed).events == POLLIN);  // the ClientHello is sent
            std::string early(taken, '\0');
            const ssize_t n = ::recv(c.sockets.server, early.data(), early.size(), 0);
            BOOST_REQUIRE(n > 0);
            early.resize(static_cast<std::size_t>(n));
            c.tls.prepend_input(early);
            BOOST_TEST(c.tls.has_buffered_input());
            BOOST_TEST(c.run_to_end());
            BOOST_TEST(c.tls.established());
        }
    }
}

BOOST_AUTO_TEST_CASE(each_handshake_failure_is_classified) {
    auto server = load();
    BOOST_TEST(failure_against_bytes(*server, "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n") == handshake_failure::plain_http);
    BOOST_TEST(failure_against_bytes(*server, random_bytes(64, 2)) == handshake_failure::malformed);
    BOOST_TEST(failure_against(*server, {.max_version = TLS1_1_VERSION}) == handshake_failure::protocol_version);
    BOOST_TEST(failure_against(*server, {.max_version = TLS1_2_VERSION, .ciphers = "AES128-SHA"}) ==
               handshake_failure::no_shared_cipher);
    BOOST_TEST(failure_against(*server, {.verify_server = true}) == handshake_failure::peer_alert);
    ask_for_client_certificates(client_auth::required);
    server = load();
    BOOST_TEST(failure_against(*server, {}) == handshake_failure::client_certificate);
    BOOST_TEST(failure_against(*server, {.certificate = &pki().stranger}) == handshake_failure::client_certificate);
}

BOOST_AUTO_TEST_CASE(a_client_that_closes_mid_handshake_is_classified_closed) {
    const auto server = load();
    // Before the server's answer (which meets a closed socket: EPIPE); after
    // it, unread (the client's close resets the connection: ECONNRESET); after
    // the client read it (a plain end of stream while the server waits for
    // the client's Finished).
    enum when { before_answer, answer_unread, answer_read };
    for (const when closing : {before_answer, answer_unread, answer_read}) {
        BOOST_TEST_CONTEXT("case " << closing) {
            socket_pair sockets;
            connection tls(*server, sockets.server);
            tls_client client(sockets.client, {});
            bool failed = false;
            BOOST_REQUIRE(waiting(client.ssl.get(), SSL_do_handshake(client.ssl.get()), failed).events == POLLIN);
            if (closing != before_answer) BOOST_REQUIRE(tls.handshake() == status::want_read);
            char answer[65536];
            if (closing == answer_read) BOOST_REQUIRE(::recv(sockets.client, answer, sizeof answer, 0) > 0);
            sockets.close_client();
            BOOST_REQUIRE(run(sockets.server, [&] { return server_handshake_step(tls); }, -1, nothing_to_do));
            BOOST_TEST(tls.failure() == handshake_failure::closed);
            BOOST_TEST_MESSAGE(tls.failure_detail());
        }
    }
}

BOOST_AUTO_TEST_CASE(info_tells_what_was_negotiated_and_who_the_client_is) {
    ask_for_client_certificates(client_auth::optional);
    const auto server = load();
    conversation first(*server, {.certificate = &pki().client}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(first.run_to_end());
    const tls_info& info = first.tls.info();
    SSL* client = first.client.ssl.get();
    BOOST_TEST(info.version == SSL_version(client));
    BOOST_TEST(info.version == TLS1_3_VERSION);
    BOOST_TEST(info.cipher_suite == SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(client)));
    BOOST_TEST(info.cipher_name == SSL_CIPHER_get_name(SSL_get_current_cipher(client)));
    BOOST_TEST(info.server_name == "a.example");
    BOOST_TEST(info.alpn == "http/1.1");
    BOOST_TEST(!info.resumed);
    BOOST_TEST(info.server_cert == test::pem_of(pki().a.cert.get()));
    BOOST_REQUIRE(info.client_cert_chain.size() == 1u);
    BOOST_TEST(info.client_cert_chain[0] == test::pem_of(pki().client.cert.get()));
    BOOST_TEST(info.client_subject == "CN=client");
    BOOST_TEST(info.client_verify_error.empty());

    // The first connection's ticket (the client read it with the response).
    const session_ptr ticket(SSL_get1_session(client));
    conversation second(*server, {.session = ticket.get(), .certificate = &pki().client}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(second.run_to_end());
    BOOST_TEST(second.tls.resumed());
    BOOST_TEST(second.tls.info().resumed);

    // optional: an untrusted certificate lets the handshake through, and the application learns why it failed.
    conversation stranger(*server, {.certificate = &pki().stranger}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(stranger.run_to_end());
    BOOST_TEST(!stranger.tls.info().client_verify_error.empty());
    BOOST_TEST_MESSAGE("stranger: " << stranger.tls.info().client_verify_error);
    BOOST_TEST(stranger.tls.info().client_subject == "CN=stranger");
}

BOOST_AUTO_TEST_CASE(read_says_closed_after_close_notify_and_after_a_plain_close) {
    const auto server = load();
    conversation notified(*server, {}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(notified.run_to_end());
    BOOST_TEST(SSL_shutdown(notified.client.ssl.get()) >= 0);  // sends close_notify
    BOOST_TEST(read_to_end(notified) == status::closed);

    conversation dropped(*server, {}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(dropped.run_to_end());
    dropped.sockets.close_client();  // no close_notify
    BOOST_TEST(read_to_end(dropped) == status::closed);
}

BOOST_AUTO_TEST_CASE(send_close_notify_ends_the_clients_stream) {
    const auto server = load();
    conversation c(*server, {}, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_REQUIRE(c.run_to_end());
    BOOST_TEST(c.tls.send_close_notify());
    BOOST_TEST(client_sees_close_notify(c.client.ssl.get(), c.sockets.client));
}

// A connection that ends after one request (HTTP/1.0, Connection: close):
// after the server's first flight, its session tickets, the response and
// close_notify leave in one send, not four; the client gets all of them.
BOOST_AUTO_TEST_CASE(tickets_a_last_response_and_close_notify_leave_in_one_send) {
    const auto server = load();
    socket_pair sockets;
    connection tls(*server, sockets.server);
    tls_client client(sockets.client, {});
    static int tickets = 0;
    tickets = 0;
    SSL_CTX_set_session_cache_mode(client.context.get(), SSL_SESS_CACHE_CLIENT);
    SSL_CTX_sess_set_new_cb(client.context.get(), [](SSL*, SSL_SESSION*) { return ++tickets, 0; });
    SSL* c = client.ssl.get();

    BOOST_TEST(SSL_do_handshake(c) == -1);  // ClientHello
    BOOST_TEST(tls.handshake() == status::want_read);
    BOOST_TEST(tls.socket_writes() == 1u);  // ServerHello .. Finished
    BOOST_TEST(!tls.has_held_output());
    BOOST_REQUIRE(SSL_do_handshake(c) == 1);  // the client's Finished
    BOOST_REQUIRE(SSL_write(c, http_request.data(), static_cast<int>(http_request.size())) > 0);

    BOOST_TEST(tls.handshake() == status::done);
    BOOST_TEST(tls.has_held_output());  // TLS 1.3's tickets wait
    char buf[512];
    std::size_t n = 0;
    BOOST_TEST(tls.read(buf, sizeof buf, n) == status::done);
    BOOST_TEST(std::string(buf, n) == http_request);
    const std::string response = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi";
    BOOST_TEST(tls.write(response.data(), response.size(), n, true) == status::done);
    BOOST_TEST(n == response.size());
    BOOST_TEST(tls.socket_writes() == 1u);
    BOOST_TEST(tls.send_close_notify());
    BOOST_TEST(tls.socket_writes() == 2u);
    BOOST_TEST(!tls.has_held_output());

    std::string got(response.size(), '\0');
    std::size_t read = 0;
    BOOST_REQUIRE(SSL_read_ex(c, got.data(), got.size(), &read) == 1);
    BOOST_TEST(got.substr(0, read) == response);
    BOOST_TEST(client_sees_close_notify(c, sockets.client));
    BOOST_TEST(tickets == 2);  // both TLS 1.3 tickets arrived
}

// Tickets held after the handshake go before the server waits: a client
// that sends nothing yet still gets them, once a read finds nothing.
BOOST_AUTO_TEST_CASE(held_tickets_go_when_a_read_finds_nothing_to_read) {
    const auto server = load();
    socket_pair sockets;
    connection tls(*server, sockets.server);
    tls_client client(sockets.client, {});
    SSL* c = client.ssl.get();
    BOOST_TEST(SSL_do_handshake(c) == -1);
    BOOST_TEST(tls.handshake() == status::want_read);
    BOOST_REQUIRE(SSL_do_handshake(c) == 1);
    BOOST_TEST(tls.handshake() == status::done);
    BOOST_TEST(tls.has_held_output());
    char buf[64];
    std::size_t n = 0;
    BOOST_TEST(tls.read(buf, sizeof buf, n) == status::want_read);
    BOOST_TEST(!tls.has_held_output());
    BOOST_TEST(tls.socket_writes() == 2u);
}

// A TLS 1.2 handshake ends with the server's Finished, which its client
// waits for: nothing is held then.
BOOST_AUTO_TEST_CASE(a_tls12_handshake_holds_nothing_back) {
    const auto server = load();
    client_options tls12;
    tls12.max_version = TLS1_2_VERSION;
    conversation c(*server, tls12, "HTTP/1.1 204 No Content\r\n\r\n");
    BOOST_TEST(c.run_to_end());
    BOOST_TEST(!c.tls.has_held_output());
}

// Small records held for close_notify through a socket that keeps filling:
// held bytes partly sent and OpenSSL retrying its record behind them. Every byte arrives, in order, then the end.
BOOST_AUTO_TEST_CASE(a_response_held_in_small_records_arrives_whole_before_close_notify) {
    const auto server = load();
    conversation c(*server, {}, random_bytes(2 << 20, 3));
    c.sockets.shrink_buffers(4096);
    c.server.slice = 700;
    c.server.close_notify = true;
    BOOST_TEST(c.run_to_end());
    BOOST_TEST(c.server.want_writes > 0);
    BOOST_TEST(sha256_hex(c.client_end.response) == sha256_hex(c.response));
    BOOST_TEST(!c.tls.has_held_output());
    BOOST_TEST(client_sees_close_notify(c.client.ssl.get(), c.sockets.client));
}

// The socket too full for what is held and close_notify: send_close_notify
// says so (false) until the client has read enough, and then the held bytes
// and the alert arrive whole, in order.
BOOST_AUTO_TEST_CASE(close_notify_behind_held_bytes_waits_for_a_full_socket) {
    const auto server = load();
    socket_pair sockets;
    sockets.shrink_buffers(1);  // the kernel's minimum
    connection tls(*server, sockets.server);
    tls_client client(sockets.client, {});
    SSL* c = client.ssl.get();
    bool failed = false;
    BOOST_REQUIRE(run(
        sockets.server, [&] { return server_handshake_step(tls); }, sockets.client,
        [&] {
            const int rc = SSL_do_handshake(c);
            return rc == 1 ? step{true} : waiting(c, rc, failed);
        }));
    BOOST_REQUIRE(tls.established());
    // Written at once and left unread: the socket's room shrinks.
    const std::string first = random_bytes(1500, 4);
    std::size_t n = 0;
    BOOST_REQUIRE(tls.write(first.data(), first.size(), n) == status::done);
    // Held, up to the limit (with the tickets the handshake left).
    const std::string last = random_bytes(3400, 5);
    BOOST_REQUIRE(tls.write(last.data(), last.size(), n, true) == status::done);
    BOOST_TEST(tls.has_held_output());
    BOOST_TEST(!tls.send_close_notify());  // no room for it all
    std::string got;
    bool ended = false;  // by close_notify
    int retries = 0;
    const std::function<step()> server_end = [&] {
        if (tls.send_close_notify()) return step{true};
        return ++retries, step{false, POLLOUT};
    };
    const std::function<step()> client_reads = [&] {
        char buf[512];
        std::size_t r = 0;
        if (SSL_read_ex(c, buf, sizeof buf, &r) == 1) return got.append(buf, r), step{false, 0};
        const int error = SSL_get_error(c, 0);
        if (error == SSL_ERROR_WANT_READ) return step{false, POLLIN};
        ended = error == SSL_ERROR_ZERO_RETURN;
        return step{true};
    };
    BOOST_REQUIRE(run(sockets.server, server_end, sockets.client, client_reads));
    BOOST_TEST(got == first + last);
    BOOST_TEST(ended);
    BOOST_TEST(!tls.has_held_output());
    BOOST_TEST(retries > 0);
}

// Several reactor threads start connections from one server_context: its
// SSL_CTX (session cache, callbacks) and the ticket key cache are shared.
// Threads 0 and 2 speak TLS 1.3, 1 and 3 TLS 1.2 (tickets of both kinds);
// every other connection resumes a session another thread's connection got
// when there is one (else one of its own).
BOOST_AUTO_TEST_CASE(four_threads_share_one_context_and_resume_each_others_tickets) {
    const auto server = load();
    (void)pki();  // made before the threads start
    constexpr int threads = 4, per_thread = 200;
    struct issued {
        int thread;
        int version;
        session_ptr session;
    };
    std::mutex pool_mutex;
    std::vector<issued> pool;
    std::atomic<int> completed{0}, resume_attempts{0}, resumed{0}, across_threads{0};
    const std::string response(2048, 'r');

    const auto serve = [&](int self) {
        const int version = self % 2 ? TLS1_2_VERSION : TLS1_3_VERSION;
        for (int i = 0; i < per_thread; ++i) {
            session_ptr session;
            bool from_another_thread = false;
            if (i % 2) {
                std::lock_guard lock(pool_mutex);
                auto chosen = pool.end();
                for (auto it = pool.begin(); it != pool.end(); ++it)
                    if (it->version == version && (chosen == pool.end() || it->thread != self)) {
                        chosen = it;
                        if (it->thread != self) break;
                    }
                if (chosen != pool.end()) {
                    from_another_thread = chosen->thread != self;
                    session = std::move(chosen->session);
                    pool.erase(chosen);
                }
            }
            conversation c(*server, {.session = session.get(), .max_version = version}, response);
            if (!c.run_to_end()) continue;
            ++completed;
            if (session) {
                ++resume_attempts;
                if (c.tls.resumed()) ++resumed, across_threads += from_another_thread;
            }
            session_ptr got(SSL_get1_session(c.client.ssl.get()));
            if (got && SSL_SESSION_is_resumable(got.get())) {
                std::lock_guard lock(pool_mutex);
                pool.push_back({self, version, std::move(got)});
            }
        }
    };
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back(serve, t);
    for (auto& w : workers) w.join();

    BOOST_TEST_MESSAGE(resumed << " of " << resume_attempts << " resumed, " << across_threads
                               << " with a session from another thread");
    BOOST_TEST(completed == threads * per_thread);
    BOOST_TEST(resume_attempts == threads * per_thread / 2);
    BOOST_TEST(resumed == resume_attempts.load());
    BOOST_TEST(across_threads > 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace m0::tls
