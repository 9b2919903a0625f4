// What a WSGI request costs the thread that runs the application, without
// the sockets and the hand-off around it: the same 13-byte app as
// bench/wsgi_bare, called from C with a fresh environ dict and a C
// start_response (CPython's floor), then through the frontend's real job
// (wsgi_call::run: GIL, environ, start_response checks, body), as a pool
// thread runs it, and the parts of that job on their own (the GIL, the
// environ, start_response's checks). Prints thread CPU per call; see
// docs/benchmarks/wsgi_call.md.
//
//   m0_bench_wsgi_call [--calls N] [--rounds R] [--connections C]
//
// The requests carry the browser-like headers of bench/wsgi_bare and come
// from C connections (one client port each) in turn. CPU is this thread's
// CPU time (CLOCK_THREAD_CPUTIME_ID) over a batch of calls; what the reactor
// does for a request (building the job, answering it) is outside the batch.
#include <Python.h>

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include <m0/executor.hpp>
#include <m0/http.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/ref.hpp>

#include "response_head.hpp"
#include "wsgi_call.hpp"
#include "wsgi_environ.hpp"
#include "wsgi_objects.hpp"

namespace {

using m0::python::py_ref;
namespace http = m0::http;

const char* const app_source = R"(
def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "13")])
    return [b"Hello, World!"]
)";

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// An exchange that only remembers the answer: the job under test needs its
// request, and complete() answers it.
class answer_recorder final : public http::exchange {
public:
    answer_recorder(boost::asio::io_context& io, const http::request& req) : io_(io), req_(req) {}
    const http::request& req() const override { return req_; }
    boost::asio::io_context& io() override { return io_; }
    void respond(unsigned status, std::vector<http::response_header>, std::string body) override {
        status_ = status;
        body_ = std::move(body);
    }
    void begin(unsigned status, std::vector<http::response_header>, std::optional<std::uint64_t>) override {
        status_ = status;
    }
    void write(std::string) override {}
    void write_file(int, std::uint64_t, std::uint64_t) override {}
    void end() override {}
    void abort() override { status_ = 0; }
    std::size_t pending_bytes() const override { return 0; }
    void when_drained(std::size_t, std::function<void()>) override {}
    bool client_gone() const override { return false; }
    void respond_borrowed(unsigned status, const std::vector<http::response_header>&, std::string_view body) override {
        status_ = status;
        body_ = std::string(body);
    }
    void read_body(std::size_t, http::body_handler) override {}
    bool body_pending() const override { return false; }
    void on_client_gone(std::function<void()>) override {}
    std::shared_ptr<http::byte_stream> upgrade(std::vector<http::response_header>) override { return nullptr; }
    void on_drain(std::function<void()>) override {}
    void end_with_trailers(std::vector<http::response_header>) override {}
    void write_shared(std::shared_ptr<const std::string>) override {}
    void on_peer_eof(std::function<void()>) override {}
    void write_shared_batch(std::span<const std::shared_ptr<const std::string>>) override {}

    unsigned status() const { return status_; }
    const std::string& body() const { return body_; }

private:
    boost::asio::io_context& io_;
    const http::request& req_;
    unsigned status_ = 0;
    std::string body_;
};

class no_lane final : public m0::executor_lane {
public:
    void submit(std::unique_ptr<m0::job>) override { throw std::logic_error("no_lane::submit"); }
    std::size_t poll_completions() override { return 0; }
    bool prepare_to_wait() override { return true; }
    void finished_waiting() override {}
    std::size_t jobs_in_flight() const override { return 0; }
};

class dropping_port final : public m0::completion_port {
public:
    void post(std::unique_ptr<m0::reactor_task>) override {}
    void finish() noexcept override {}
};

// The requests of `connections` clients, as the engine parses them.
std::vector<http::request> make_requests(unsigned connections) {
    std::vector<http::request> out(connections);
    for (unsigned i = 0; i < connections; ++i) {
        http::request& r = out[i];
        r.method = "GET";
        r.target = r.path = "/";
        r.headers = {{"Host", "127.0.0.1:8000"},
                     {"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"},
                     {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"},
                     {"Accept-Language", "en-US,en;q=0.5"}};
        r.remote = {boost::asio::ip::make_address("127.0.0.1"), static_cast<std::uint16_t>(40000 + i)};
        r.local = {boost::asio::ip::make_address("127.0.0.1"), 8000};
    }
    return out;
}

// CPython's floor: a fresh environ dict (a copy of a prebuilt one with the
// same keys), a C start_response that accepts its arguments, the app called
// and its body checked.
struct floor_call {
    explicit floor_call(PyObject* app) : app(app) {
        static PyMethodDef def = {"start_response",
                                  reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(start_response)),
                                  METH_FASTCALL, nullptr};
        sr = py_ref(PyCFunction_New(&def, nullptr));
        prebuilt = py_ref(PyDict_New());
        for (const char* k : {"REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "RAW_URI", "SERVER_PROTOCOL",
                              "SERVER_NAME", "SERVER_PORT", "REMOTE_ADDR", "REMOTE_PORT", "SCRIPT_NAME",
                              "SERVER_SOFTWARE", "HTTP_HOST", "HTTP_ACCEPT", "HTTP_USER_AGENT",
                              "HTTP_ACCEPT_LANGUAGE", "wsgi.version", "wsgi.url_scheme", "wsgi.input",
                              "wsgi.errors", "wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once",
                              "wsgi.input_terminated", "wsgi.file_wrapper"}) {
            py_ref key(PyUnicode_InternFromString(k)), value(PyUnicode_FromString(k));
            PyDict_SetItem(prebuilt.get(), key.get(), value.get());
        }
    }
    static PyObject* start_response(PyObject*, PyObject* const*, Py_ssize_t nargs) {
        if (nargs < 2) return nullptr;
        Py_RETURN_NONE;
    }
    bool operator()() {
        py_ref env(PyDict_Copy(prebuilt.get()));
        PyObject* args[2] = {env.get(), sr.get()};
        py_ref result(PyObject_Vectorcall(app, args, 2, nullptr));
        if (!result || !PyList_CheckExact(result.get())) return false;
        return PyBytes_GET_SIZE(PyList_GET_ITEM(result.get(), 0)) == 13;
    }
    PyObject* app;
    py_ref sr, prebuilt;
};

struct options {
    unsigned calls = 200000, rounds = 5, connections = 16;
};

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&] {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return static_cast<unsigned>(std::stoul(argv[++i]));
        };
        if (a == "--calls") o.calls = next();
        else if (a == "--rounds") o.rounds = next();
        else if (a == "--connections") o.connections = std::max(1u, next());
        else throw std::invalid_argument("unknown option " + a + " (--calls N, --rounds R, --connections C)");
    }
    return o;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
    const options opt = parse(argc, argv);
    m0::python::start(m0::python::interpreter_settings{});
    m0::python::attach_thread();  // as the pool's thread hooks do

    m0::wsgi::application app;
    {
        m0::python::gil_scope gil;
        if (!m0::wsgi::init_object_types()) throw std::runtime_error("cannot ready the WSGI types");
        py_ref globals(PyDict_New());
        PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
        py_ref r(PyRun_String(app_source, Py_file_input, globals.get(), globals.get()));
        if (!r) throw std::runtime_error("cannot define the app");
        app.callable = py_ref::borrow(PyDict_GetItemString(globals.get(), "app"));
        app.environ = std::make_unique<m0::wsgi::environ_builder>(app.config);
        app.checked = std::make_unique<m0::wsgi::checked_strings>();
    }

    boost::asio::io_context io;
    no_lane lane;
    dropping_port port;
    const std::vector<http::request> requests = make_requests(opt.connections);
    constexpr unsigned batch = 1000;

    // One batch: jobs built and answered outside the timed part, as the
    // reactor does; run() timed, each under its own GIL acquisition.
    auto job_batch = [&](unsigned n) {
        std::vector<std::shared_ptr<answer_recorder>> exchanges;
        std::vector<std::unique_ptr<m0::wsgi::wsgi_call>> jobs;
        exchanges.reserve(n);
        jobs.reserve(n);
        for (unsigned i = 0; i < n; ++i) {
            const http::request& req = requests[i % requests.size()];
            auto ex = std::make_shared<answer_recorder>(io, req);
            m0::wsgi::request_facts facts;
            facts.path_info = "/";
            exchanges.push_back(ex);
            jobs.push_back(std::make_unique<m0::wsgi::wsgi_call>(app, lane, ex, std::move(facts)));
        }
        const double t0 = thread_cpu_ns();
        for (auto& j : jobs) j->run(port);
        const double spent = thread_cpu_ns() - t0;
        for (unsigned i = 0; i < n; ++i) {
            jobs[i]->complete(false);
            if (exchanges[i]->status() != 200 || exchanges[i]->body() != "Hello, World!")
                throw std::runtime_error("the job answered " + std::to_string(exchanges[i]->status()));
        }
        {
            m0::python::gil_scope gil;  // the jobs' last references are dropped with the GIL
            jobs.clear();
        }
        return spent;
    };

    auto floor_batch = [&](floor_call& call, unsigned n) {
        m0::python::gil_scope gil;
        const double t0 = thread_cpu_ns();
        for (unsigned i = 0; i < n; ++i)
            if (!call()) throw std::runtime_error("the floor call failed");
        return thread_cpu_ns() - t0;
    };

    std::unique_ptr<floor_call> floor;
    {
        m0::python::gil_scope gil;
        floor = std::make_unique<floor_call>(app.callable.get());
    }

    auto gil_batch = [&](unsigned n) {
        const double t0 = thread_cpu_ns();
        for (unsigned i = 0; i < n; ++i) m0::python::gil_scope gil;
        return thread_cpu_ns() - t0;
    };

    // The parts of a call on their own, GIL held: the environ (made and
    // freed), and start_response's checks of the app's status and headers.
    std::vector<m0::wsgi::request_facts> facts(requests.size());
    for (auto& f : facts) f.path_info = "/";
    auto environ_batch = [&](unsigned n) {
        m0::python::gil_scope gil;
        const double t0 = thread_cpu_ns();
        for (unsigned i = 0; i < n; ++i) {
            const std::size_t c = i % requests.size();
            py_ref env(app.environ->build(requests[c], facts[c], Py_None));
            if (!env) throw std::runtime_error("the environ could not be made");
        }
        return thread_cpu_ns() - t0;
    };
    py_ref status, headers;
    {
        m0::python::gil_scope gil;
        status = py_ref(PyUnicode_FromString("200 OK"));
        headers = py_ref(Py_BuildValue("[(ss)(ss)]", "Content-Type", "text/plain", "Content-Length", "13"));
    }
    auto checks_batch = [&](unsigned n) {
        m0::python::gil_scope gil;
        const double t0 = thread_cpu_ns();
        for (unsigned i = 0; i < n; ++i) {
            m0::wsgi::response_head head;
            if (!m0::wsgi::parse_status(status.get(), head.status, app.checked.get()) ||
                !m0::wsgi::parse_headers(headers.get(), head, app.checked.get()))
                throw std::runtime_error("start_response refused the app's arguments");
        }
        return thread_cpu_ns() - t0;
    };

    struct arm {
        const char* name;
        std::function<double(unsigned)> batch;
        std::vector<double> ns;
    };
    std::vector<arm> arms = {
        {"C floor: environ copy, C start_response", [&](unsigned n) { return floor_batch(*floor, n); }, {}},
        {"wsgi_call::run (GIL taken per call)", job_batch, {}},
        {"  GIL taken and released (gil_scope)", gil_batch, {}},
        {"  environ made and freed", environ_batch, {}},
        {"  start_response checks", checks_batch, {}},
    };
    job_batch(batch);  // warm-up: header names and values seen once
    for (unsigned r = 0; r < opt.rounds; ++r) {
        std::vector<double> spent(arms.size());
        for (unsigned done = 0; done < opt.calls; done += batch)
            for (std::size_t a = 0; a < arms.size(); ++a) spent[a] += arms[a].batch(batch);
        for (std::size_t a = 0; a < arms.size(); ++a) arms[a].ns.push_back(spent[a] / opt.calls);
    }

    std::printf("WSGI call on one thread: 13-byte app, browser-like headers, %u connections, %u calls x %u rounds "
                "(median), thread CPU\n",
                opt.connections, opt.calls, opt.rounds);
    std::printf("%-44s %12s\n", "arm", "CPU us/call");
    for (const arm& a : arms) std::printf("%-44s %12.3f\n", a.name, median(a.ns) / 1000);
    {
        m0::python::gil_scope gil;
        status = headers = py_ref();
        floor.reset();
        app.environ.reset();
        app.checked.reset();
        app.callable = py_ref();
        m0::wsgi::request_objects::clear_thread_cache();
    }
    m0::python::detach_thread();
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "m0_bench_wsgi_call: %s\n", e.what());
    return 2;
}
