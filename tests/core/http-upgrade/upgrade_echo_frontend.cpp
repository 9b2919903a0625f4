// Test-only frontend `upgrade_echo`: /echo answers 101 Switching Protocols
// (Upgrade: echo) and then echoes every byte it reads. When the worker
// drains it writes "bye\n" (a shared payload) and closes; with
// ?ignore_drain it keeps echoing, so the drain deadline has to close it.
// Any other path gets 404.
#include <memory>
#include <string>
#include <string_view>

#include <m0/config.hpp>
#include <m0/frontend.hpp>
#include <m0/http.hpp>
#include <m0/plugin.hpp>

namespace m0::test_upgrade_echo {
namespace {

void echo(std::shared_ptr<http::byte_stream> s) {
    s->async_read([s](boost::system::error_code ec, std::string_view data) {
        if (ec) {
            s->close();
            return;
        }
        s->write(std::string(data));
        echo(s);
    });
}

class echo_handler final : public http::handler {
public:
    void on_request(http::exchange_ptr ex) override {
        const http::request& req = ex->req();
        if (req.path != "/echo") {
            ex->respond(404, {{"Content-Type", "text/plain"}}, "not found\n");
            return;
        }
        auto s = ex->upgrade({{"Upgrade", "echo"}});
        if (!s) {
            ex->respond(400, {{"Content-Type", "text/plain"}}, "cannot upgrade\n");
            return;
        }
        if (req.query != "ignore_drain") {
            s->on_drain([s, bye = bye_] {
                s->write_shared(bye);
                s->close();
            });
        }
        echo(s);
    }

private:
    // One payload for every stream: written without a copy per connection.
    std::shared_ptr<const std::string> bye_ = std::make_shared<const std::string>("bye\n");
};

class echo_frontend final : public frontend {
public:
    void start_reactor(reactor_context& ctx) override { http::serve(ctx, handler_); }

private:
    echo_handler handler_;
};

std::unique_ptr<frontend> make_echo_frontend(plugin_context& ctx) {
    ctx.section->allow_keys({"type"});
    return std::make_unique<echo_frontend>();
}

}  // namespace
}  // namespace m0::test_upgrade_echo

M0_FRONTEND_PLUGIN("upgrade_echo", "test only: 101 then an echo of every byte",
                   ::m0::test_upgrade_echo::make_echo_frontend);
