#pragma once
// What the server keeps of every open connection, whichever protocol it
// speaks (HTTP/1.1: session; HTTP/2: http2::h2_session): the hooks of a
// drain and a force-close, and the list link. Reactor-thread only.
#include <boost/intrusive/list_hook.hpp>

namespace m0::http::detail {

class connection : public boost::intrusive::list_base_hook<> {
public:
    connection() = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    // The reactor drains: finish what is in flight, then close.
    virtual void drain() = 0;
    // The drain deadline passed (or the reactor stops): close now.
    virtual void force_close() = 0;

protected:
    ~connection() = default;
};

}  // namespace m0::http::detail
