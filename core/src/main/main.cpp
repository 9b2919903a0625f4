// The m0 command line: serve, check, list plugins. Shared by the `m0`
// binary (binary_main.cpp) and the hosted entry point of the wheel (the m0
// Python package), which differ only in what cli_host says.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/program_options.hpp>

#include <m0/config.hpp>
#include <m0/log.hpp>
#include <m0/version.hpp>

#include "main/cli.hpp"
#include "main/cli_environment.hpp"
#include "main/interface_probe.hpp"
#include "server/server_runner.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* usage_head =
    "m0 " M0_VERSION_STRING " — a plugin-based server for Python web applications and native handlers\n"
    "\n"
    "Usage:\n"
    "  m0 MODULE:APP [options]             serve a WSGI or ASGI app on 127.0.0.1:8000 (same as --app)\n"
    "  m0 --config FILE [options]          serve the deployment described in FILE (YAML)\n"
    "  m0 --check --config FILE [options]  validate, print the effective config, exit\n"
    "  m0 plugins [--config FILE]          list every plugin found\n"
    "  m0 --version\n"
    "\n"
    "Options";

constexpr const char* usage_tail =
    "\n"
    "Every YAML key can be overridden: --set server.threads=4, --set 'server.listen=[\"[::1]:8080\"]'.\n"
    "--listen, --bind, --uds and --host/--port together give server.listen (each replaces the YAML's list).\n"
    "Every option but --help, --version and --check can be given as an environment variable: M0_ and its\n"
    "name in capitals, '-' as '_' (M0_WORKERS=4, M0_APP=main:app, M0_RELOAD=1); a repeatable one holds one\n"
    "value per line or values separated by ';' (M0_LISTEN='0.0.0.0:80;[::]:80'); M0_SET one per line only.\n"
    "Precedence: a flag over its environment variable over the YAML file; --check says where each came from.\n"
    "Shortcuts are applied before --set, in this order: --app, --listen, --threads, --workers, --scheduler,\n"
    "--venv, --chdir, --log-level, --access-log.\n"
    "Exit codes: 0 success, 1 start-up failure (e.g. address in use), 2 configuration or plugin error.\n"
    "Signals: SIGTERM drains (server.drain_timeout), SIGINT drains briefly, a second signal stops at once.\n"
    "With server.workers > 1 a supervisor forwards them to every process; SIGQUIT to it stops at once;\n"
    "SIGHUP reloads code and config, SIGTTIN/SIGTTOU add/remove a process. SIGUSR1 reopens the access log.\n"
    "Coming from uvicorn, Granian or gunicorn: docs/migrating.md.\n"
    "Docs: README.md, docs/config.md, and each plugin's README.\n";

std::string quoted_yaml(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += "''";
        else out += c;
    }
    return out + "'";
}

// Where an option's value came from: the command line, else the environment.
struct option_sources {
    po::variables_map cli;
    po::variables_map env;

    const po::variable_value* find(const std::string& name, std::string* source = nullptr) const {
        if (cli.count(name)) {
            if (source) *source = "--" + name;
            return &cli[name];
        }
        if (env.count(name)) {
            if (source) *source = m0::environment_name(name);
            return &env[name];
        }
        return nullptr;
    }
    template <class T>
    std::optional<T> get(const std::string& name, std::string* source = nullptr) const {
        if (const auto* v = find(name, source)) return v->as<T>();
        return std::nullopt;
    }
    bool has(const std::string& name) const { return find(name) != nullptr; }
};

// The --set overrides the options resolve to, each with its origin for
// --check: the environment's are applied first, so that a flag's win.
struct resolved_sets {
    std::vector<std::string> env, cli;
    std::vector<std::string> origins;

    void add(std::string set, const std::string& source) {
        origins.push_back(set + "    <- " + source);
        (source.rfind("M0_", 0) == 0 ? env : cli).push_back(std::move(set));
    }
};

// An address of --host/--port (uvicorn's and Granian's): IPv6 in brackets.
std::string host_port(const std::string& host, unsigned port) {
    const bool v6 = host.find(':') != std::string::npos && host.front() != '[';
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// server.listen from --listen, --bind and --host/--port, all from the
// command line if any is given there, else from the environment.
std::optional<std::string> listen_list(const option_sources& o, std::string& source) {
    const std::vector<std::string> names = {"listen", "bind", "uds", "host", "port"};
    const po::variables_map* from = nullptr;
    for (const auto* vm : {&o.cli, &o.env})
        for (const auto& n : names)
            if (!from && vm->count(n)) from = vm;
    if (!from) return std::nullopt;
    const bool cli = from == &o.cli;
    std::vector<std::string> addresses;
    for (const std::string n : {"listen", "bind"})
        if (from->count(n)) {
            for (const auto& a : (*from)[n].as<std::vector<std::string>>()) addresses.push_back(a);
            source += (source.empty() ? "" : ", ") + (cli ? "--" + n : m0::environment_name(n));
        }
    if (from->count("uds")) {
        addresses.push_back("unix:" + (*from)["uds"].as<std::string>());
        source += (source.empty() ? "" : ", ") + (cli ? std::string("--uds") : m0::environment_name("uds"));
    }
    if (from->count("host") || from->count("port")) {
        const std::string host = from->count("host") ? (*from)["host"].as<std::string>() : "127.0.0.1";
        const unsigned port = from->count("port") ? (*from)["port"].as<unsigned>() : 8000;
        addresses.push_back(host_port(host, port));
        source += std::string(source.empty() ? "" : ", ") + (cli ? "--host/--port" : "M0_HOST/M0_PORT");
    }
    std::string list = "server.listen=[";
    for (std::size_t i = 0; i < addresses.size(); ++i) list += (i ? "," : "") + quoted_yaml(addresses[i]);
    return list + "]";
}

// The interface --interface auto found for the app, kept for the reloads of
// --reload (read and set by run_cli only).
constexpr const char* probed_variable = "M0_PROBED_INTERFACE";

// gunicorn's -c takes a Python file: say what m0 takes instead.
constexpr const char* python_config_error =
    "m0 takes a YAML file, not a Python one (gunicorn's -c): m0's settings are YAML keys (docs/config.md), "
    "and gunicorn's map to them: bind -> server.listen (or -b/--bind), workers -> server.workers (-w), "
    "threads -> executor.pool.threads, timeout -> server.request_timeout, graceful_timeout -> "
    "server.drain_timeout, max_requests -> server.max_requests, pidfile -> server.pid_file, accesslog -> "
    "log.access_file (--access-log=FILE); see docs/migrating.md";

std::string command_list(const std::vector<std::string>& known) {
    if (known.size() == 1) return ": the one command is '" + known[0] + "'";
    std::string out = ": the commands are";
    for (std::size_t i = 0; i < known.size(); ++i)
        out += (i == 0 ? " '" : i + 1 == known.size() ? " and '" : ", '") + known[i] + "'";
    return out;
}

}  // namespace

namespace m0 {

int run_cli(int argc, char** argv, const cli_host& host) {
    po::options_description opts(usage_head);
    opts.add_options()
        ("help,h", "show this help")
        ("version", "print the version and the build signature")
        ("config,c", po::value<std::string>(), "YAML deployment file")
        ("set", po::value<std::vector<std::string>>(), "override a key: --set key.path=value (repeatable)")
        ("listen,l", po::value<std::vector<std::string>>(),
         "HOST:PORT or unix:PATH to listen on (repeatable; replaces server.listen)")
        ("bind,b", po::value<std::vector<std::string>>(), "the same as --listen (gunicorn's spelling; repeatable)")
        ("host", po::value<std::string>(), "listen on HOST:PORT with --port (uvicorn's, Granian's); default 127.0.0.1")
        ("port", po::value<unsigned>(), "the port of --host; default 8000")
        ("uds", po::value<std::string>(), "listen on a Unix socket at PATH (uvicorn's, Granian's; the same as "
                                          "--bind unix:PATH)")
        ("threads,t", po::value<unsigned>(), "reactor threads per process, 1..256 (server.threads); not app threads")
        ("reactors", po::value<unsigned>(), "the same as --threads")
        ("workers,w", po::value<unsigned>(), "serving processes under a supervisor, 1..256 (server.workers)")
        ("scheduler", po::value<std::string>(), "scheduler plugin: reactors or balanced (scheduler.type)")
        ("app", po::value<std::string>(), "serve a Python callable (frontend.type=wsgi|asgi, frontend.app=...)")
        ("factory", "the app is a factory: serve what calling it returns (as MODULE:create_app())")
        ("venv", po::value<std::string>(), "the Python virtual environment to import from (python.venv)")
        ("chdir", po::value<std::string>(), "directory the app is imported from, put first on sys.path (frontend.chdir)")
        ("log-level", po::value<std::string>(), "debug, info, warning or error (log.level)")
        ("access-log", po::value<std::string>()->implicit_value("-"),
         "write an access log: to stderr, or --access-log=FILE (log.access, log.access_file)")
        ("interface", po::value<std::string>(),
         "with an app: wsgi, asgi, or auto (the default: a coroutine function, or an object whose __call__ is one, "
         "is ASGI)")
        ("reload", "development: restart the worker processes when the app's source or the config file changes, "
                   "the listening sockets kept (a change that fails to import leaves the last good code serving)")
        ("reload-dir", po::value<std::vector<std::string>>(),
         "with --reload: a directory to watch (repeatable); default: the one the app is imported from")
        ("reload-include", po::value<std::vector<std::string>>(),
         "with --reload: file names to watch, a glob (repeatable); default '*.py'")
        ("reload-exclude", po::value<std::vector<std::string>>(),
         "with --reload: files or directories not watched, a glob (repeatable; besides .venv, venv, node_modules, "
         "__pycache__, .git and other tools' directories)")
        ("reload-poll", "with --reload: look at the files every second rather than wait for inotify (a bind mount "
                        "from another OS, a network file system)")
        ("check", "validate the configuration, print it with defaults filled in (and where each setting came from), "
                  "and exit");
    po::options_description hidden;
    hidden.add_options()("command", po::value<std::vector<std::string>>(), "command");
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description positional;
    positional.add("command", -1);

    option_sources o;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), o.cli);
        po::notify(o.cli);
    } catch (const po::error& e) {
        std::cerr << "m0: " << e.what() << "\nTry 'm0 --help'.\n";
        return 2;
    }

    if (o.cli.count("help")) {
        std::cout << opts << usage_tail << host.help_extra;
        return 0;
    }
    if (o.cli.count("version")) {
        std::cout << "m0 " << M0_VERSION_STRING << "\nbuild signature: " << M0_BUILD_SIGNATURE << "\npython: "
                  << host.python_mode << "\n";
        return 0;
    }
    try {
        std::vector<std::string> warnings;
        const auto tokens = environment_arguments(opts, {"help", "version", "check"}, warnings);
        for (const auto& w : warnings) m0::log::warning(w);
        po::store(po::command_line_parser(tokens).options(opts).run(), o.env);
        po::notify(o.env);
    } catch (const std::exception& e) {
        std::cerr << "m0: in the environment: " << e.what() << "\nTry 'm0 --help'.\n";
        return 2;
    }

    std::vector<std::string> commands;
    if (o.cli.count("command")) commands = o.cli["command"].as<std::vector<std::string>>();
    std::vector<std::string> known = {"plugins"};
    known.insert(known.end(), host.extra_commands.begin(), host.extra_commands.end());
    // `m0 MODULE:APP` (uvicorn's, Granian's): a positional with a colon that
    // names no command is the app.
    std::string positional_app;
    if (!commands.empty() && commands[0].find(':') != std::string::npos &&
        std::find(known.begin(), known.end(), commands[0]) == known.end()) {
        positional_app = commands[0];
        if (commands.size() > 1) {
            std::cerr << "m0: unexpected argument '" << commands[1] << "' after the app '" << positional_app
                      << "': one MODULE:APP is served (more addresses: --listen)\nTry 'm0 --help'.\n";
            return 2;
        }
        if (o.cli.count("app")) {
            std::cerr << "m0: the app is given twice, as '" << positional_app << "' and as --app "
                      << o.cli["app"].as<std::string>() << ": give one\nTry 'm0 --help'.\n";
            return 2;
        }
        commands.clear();
    }

    m0::run_options options;
    resolved_sets sets;
    std::string source;
    if (const auto config = o.get<std::string>("config", &source)) {
        const auto& c = *config;
        if (c.size() > 3 && c.compare(c.size() - 3, 3, ".py") == 0) {
            std::cerr << "m0: " << source << " " << c << ": " << python_config_error << "\n";
            return 2;
        }
        options.config_file = c;
        sets.origins.push_back("the YAML file " + c + "    <- " + source);
    }
    std::optional<std::string> app;
    if (!positional_app.empty()) {
        app = positional_app;
        source = "the MODULE:APP argument";
    } else {
        app = o.get<std::string>("app", &source);
    }
    if (app) {
        std::string app_source = source;
        if (o.find("factory", &source) && app->back() != ')') {
            *app += "()";
            app_source += " and " + source;
        }
        std::string interface = o.get<std::string>("interface", &source).value_or("auto");
        if (interface != "auto" && interface != "wsgi" && interface != "asgi") {
            std::cerr << "m0: --interface must be auto, wsgi or asgi, not '" << interface << "'\n";
            return 2;
        }
        if (interface == "auto") {
            source = "--interface auto";
            // --reload: what the first probe found serves the reloads too (each
            // reload's check and new m0 would import the app once more to probe).
            const char* probed = std::getenv(probed_variable);
            if (probed && (*app + "=wsgi" == probed || *app + "=asgi" == probed)) {
                interface = std::string(probed).substr(app->size() + 1);
            } else {
                // Decided here, before any plugin loads: the frontend is chosen by type.
                interface = m0::probe_interface(*app, o.get<std::string>("venv").value_or(""),
                                                o.get<std::string>("chdir").value_or(""), host.python_executable);
                m0::log::info("app " + *app + ": serving it as " + interface + " (--interface auto)");
            }
            if (o.has("reload")) ::setenv(probed_variable, (*app + "=" + interface).c_str(), 1);
        }
        sets.add("frontend.type=" + interface, source);
        sets.add("frontend.app=" + quoted_yaml(*app), app_source);
    } else if (o.has("factory")) {
        std::cerr << "m0: --factory needs an app (MODULE:APP or --app)\nTry 'm0 --help'.\n";
        return 2;
    }
    source.clear();
    if (auto list = listen_list(o, source)) sets.add(*list, source);
    std::optional<unsigned> threads = o.get<unsigned>("reactors", &source);
    if (!threads) threads = o.get<unsigned>("threads", &source);
    if (threads) {
        // gunicorn's -t is a timeout in seconds and its --threads are
        // application threads: m0 keeps its meaning, and says so when the
        // number looks like one of those.
        if (const unsigned cpus = std::thread::hardware_concurrency(); cpus && *threads > cpus)
            m0::log::warning(source + " " + std::to_string(*threads) + ": " + std::to_string(*threads) +
                             " reactor threads per process on " + std::to_string(cpus) +
                             " CPUs; gunicorn's -t is a timeout (m0: server.request_timeout) and its "
                             "--threads are application threads (m0: executor.pool.threads)");
        sets.add("server.threads=" + std::to_string(*threads), source);
    }
    if (auto v = o.get<unsigned>("workers", &source)) sets.add("server.workers=" + std::to_string(*v), source);
    if (auto v = o.get<std::string>("scheduler", &source)) sets.add("scheduler.type=" + quoted_yaml(*v), source);
    if (auto v = o.get<std::string>("venv", &source)) sets.add("python.venv=" + quoted_yaml(*v), source);
    if (auto v = o.get<std::string>("chdir", &source)) sets.add("frontend.chdir=" + quoted_yaml(*v), source);
    if (auto v = o.get<std::string>("log-level", &source)) sets.add("log.level=" + quoted_yaml(*v), source);
    if (auto v = o.get<std::string>("access-log", &source)) {
        sets.add("log.access=true", source);
        if (*v != "-") sets.add("log.access_file=" + quoted_yaml(*v), source);
    }
    // The environment's shortcuts, then M0_SET, then the flags, then --set:
    // each overrides what came before it.
    options.sets = sets.env;
    for (const auto* vm : {&o.env, &o.cli}) {
        if (vm == &o.cli) options.sets.insert(options.sets.end(), sets.cli.begin(), sets.cli.end());
        if (!vm->count("set")) continue;
        for (const auto& s : (*vm)["set"].as<std::vector<std::string>>()) {
            options.sets.push_back(s);
            sets.origins.push_back(s + "    <- " + (vm == &o.cli ? "--set" : "M0_SET"));
        }
    }
    if (o.find("reload", &source)) {
        options.reload = true;
        sets.origins.push_back("reload mode    <- " + source);
        auto list = [&](const std::string& name) {
            return o.get<std::vector<std::string>>(name).value_or(std::vector<std::string>{});
        };
        options.reload_watch.dirs = list("reload-dir");
        options.reload_watch.includes = list("reload-include");
        options.reload_watch.excludes = list("reload-exclude");
        options.reload_watch.poll = o.has("reload-poll");
        options.reload_watch.since_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count();
    } else {
        for (const std::string n : {"reload-dir", "reload-include", "reload-exclude", "reload-poll"})
            if (o.find(n, &source)) {
                std::cerr << "m0: " << source << " needs --reload\nTry 'm0 --help'.\n";
                return 2;
            }
    }
    options.origins = std::move(sets.origins);
    options.check_only = o.cli.count("check") > 0;
    options.command_line = host.command_prefix;
    if (options.command_line.empty()) options.command_line.push_back(argv[0]);
    options.command_line.insert(options.command_line.end(), argv + 1, argv + argc);

    if (!commands.empty()) {
        if (commands[0] == "plugins" && commands.size() == 1) return m0::list_plugins(options);
        if (commands[0] == "plugins") {
            std::cerr << "m0 plugins: unexpected argument '" << commands[1]
                      << "': it takes none (it lists every plugin found, with its kind and description; "
                         "--config FILE adds the file's plugins.path)\nTry 'm0 --help'.\n";
            return 2;
        }
        std::cerr << "m0: unknown command '" << commands[0] << "'";
        if (auto near = m0::nearest_key(commands[0], known)) std::cerr << " (did you mean '" << *near << "'?)";
        std::cerr << command_list(known) << "; to serve, give MODULE:APP (with its colon: '" << commands[0]
                  << ":app'), --app or --config FILE\nTry 'm0 --help'.\n";
        return 2;
    }
    if (options.config_file.empty() && !app) {
        std::cerr << "m0: nothing to serve: give MODULE:APP, --app module:callable or --config FILE\n"
                     "Try 'm0 --help'.\n";
        return 2;
    }
    return m0::run_server(options);
}

}  // namespace m0
