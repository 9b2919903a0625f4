#include <csignal>
#include <memory>

#include <m0/http.hpp>

#include "http/server.hpp"

namespace m0::http {

namespace {
// sendfile(2) has no MSG_NOSIGNAL: a client that resets mid-file raises
// SIGPIPE, whose default action would kill the whole server. Left alone if
// the process already chose a disposition.
void ignore_sigpipe_once() {
    static const bool done = [] {
        struct sigaction current{};
        if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
            std::signal(SIGPIPE, SIG_IGN);
        return true;
    }();
    (void)done;
}
}  // namespace

void serve(reactor_context& ctx, handler& h) {
    // One mount of several: the core's server for this worker routes to h.
    if (ctx.mount) {
        ctx.mount->bind(h);
        return;
    }
    ignore_sigpipe_once();
    auto srv = std::make_shared<detail::server>(ctx, h);
    ctx.add_drain_hook([srv] { srv->drain(); });
    ctx.add_force_close_hook([srv] { srv->force_close(); });
    srv->start();
}

}  // namespace m0::http
