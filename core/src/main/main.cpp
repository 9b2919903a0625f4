// The m0 command line: serve, check, list plugins. Shared by the `m0`
// binary (binary_main.cpp) and the hosted entry point of the wheel (the m0
// Python package), which differ only in what cli_host says.
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include <m0/config.hpp>
#include <m0/log.hpp>
#include <m0/version.hpp>

#include "main/cli.hpp"
#include "main/interface_probe.hpp"
#include "server/server_runner.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* usage_head =
    "m0 " M0_VERSION_STRING " — a plugin-based server for Python web applications and native handlers\n"
    "\n"
    "Usage:\n"
    "  m0 --config FILE [options]          serve the deployment described in FILE\n"
    "  m0 --check --config FILE [options]  validate, print the effective config, exit\n"
    "  m0 --app module:callable            serve a WSGI or ASGI app on 127.0.0.1:8000\n"
    "  m0 plugins [--config FILE]          list every plugin found\n"
    "  m0 --version\n"
    "\n"
    "Options";

constexpr const char* usage_tail =
    "\n"
    "Every YAML key can be overridden: --set server.threads=4, --set 'server.listen=[\"[::1]:8080\"]'.\n"
    "Shortcuts are applied before --set, in this order: --app, --listen, --threads, --workers, --scheduler,\n"
    "--venv, --chdir, --log-level, --access-log.\n"
    "Exit codes: 0 success, 1 start-up failure (e.g. address in use), 2 configuration or plugin error.\n"
    "Signals: SIGTERM drains (server.drain_timeout), SIGINT drains briefly, a second signal stops at once.\n"
    "With server.workers > 1 a supervisor forwards them to every process; SIGQUIT to it stops at once;\n"
    "SIGHUP reloads code and config, SIGTTIN/SIGTTOU add/remove a process. SIGUSR1 reopens the access log.\n"
    "Docs: README.md, docs/config.md, and each plugin's README.\n";

std::string quoted_yaml(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += "''";
        else out += c;
    }
    return out + "'";
}

}  // namespace

namespace m0 {

int run_cli(int argc, char** argv, const cli_host& host) {
    po::options_description opts(usage_head);
    opts.add_options()
        ("help,h", "show this help")
        ("version", "print the version and the build signature")
        ("config,c", po::value<std::string>(), "YAML deployment file")
        ("set", po::value<std::vector<std::string>>()->composing(), "override a key: --set key.path=value (repeatable)")
        ("listen,l", po::value<std::vector<std::string>>()->composing(), "HOST:PORT to listen on (repeatable; replaces server.listen)")
        ("threads,t", po::value<unsigned>(), "reactor threads per process, 1..256 (server.threads)")
        ("workers,w", po::value<unsigned>(), "serving processes under a supervisor, 1..256 (server.workers)")
        ("scheduler", po::value<std::string>(), "scheduler plugin: reactors or balanced (scheduler.type)")
        ("app", po::value<std::string>(), "serve a Python callable (frontend.type=wsgi|asgi, frontend.app=...)")
        ("venv", po::value<std::string>(), "the Python virtual environment to import from (python.venv)")
        ("chdir", po::value<std::string>(), "directory the app is imported from, put first on sys.path (frontend.chdir)")
        ("log-level", po::value<std::string>(), "debug, info, warning or error (log.level)")
        ("access-log", po::value<std::string>()->implicit_value("-"),
         "write an access log: to stderr, or --access-log=FILE (log.access, log.access_file)")
        ("interface", po::value<std::string>()->default_value("auto"),
         "with --app: wsgi, asgi, or auto (a coroutine function, or an object whose __call__ is one, is ASGI)")
        ("check", "validate the configuration, print it with defaults filled in, and exit");
    po::options_description hidden;
    hidden.add_options()("command", po::value<std::vector<std::string>>(), "command");
    po::options_description all;
    all.add(opts).add(hidden);
    po::positional_options_description positional;
    positional.add("command", -1);

    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "m0: " << e.what() << "\nTry 'm0 --help'.\n";
        return 2;
    }

    if (vm.count("help")) {
        std::cout << opts << usage_tail << host.help_extra;
        return 0;
    }
    if (vm.count("version")) {
        std::cout << "m0 " << M0_VERSION_STRING << "\nbuild signature: " << M0_BUILD_SIGNATURE << "\npython: "
                  << host.python_mode << "\n";
        return 0;
    }

    m0::run_options options;
    if (vm.count("config")) options.config_file = vm["config"].as<std::string>();
    if (vm.count("app")) {
        const std::string app = vm["app"].as<std::string>();
        std::string interface = vm["interface"].as<std::string>();
        if (interface != "auto" && interface != "wsgi" && interface != "asgi") {
            std::cerr << "m0: --interface must be auto, wsgi or asgi, not '" << interface << "'\n";
            return 2;
        }
        if (interface == "auto") {
            // Decided here, before any plugin loads: the frontend is chosen by type.
            interface = m0::probe_interface(app, vm.count("venv") ? vm["venv"].as<std::string>() : "",
                                            vm.count("chdir") ? vm["chdir"].as<std::string>() : "",
                                            host.python_executable);
            m0::log::info("--app " + app + ": serving it as " + interface + " (--interface auto)");
        }
        options.sets.push_back("frontend.type=" + interface);
        options.sets.push_back("frontend.app=" + quoted_yaml(app));
    }
    if (vm.count("listen")) {
        std::string list = "server.listen=[";
        bool first = true;
        for (const auto& l : vm["listen"].as<std::vector<std::string>>()) {
            if (!first) list += ",";
            list += quoted_yaml(l);
            first = false;
        }
        options.sets.push_back(list + "]");
    }
    if (vm.count("threads")) options.sets.push_back("server.threads=" + std::to_string(vm["threads"].as<unsigned>()));
    if (vm.count("workers")) options.sets.push_back("server.workers=" + std::to_string(vm["workers"].as<unsigned>()));
    if (vm.count("scheduler"))
        options.sets.push_back("scheduler.type=" + quoted_yaml(vm["scheduler"].as<std::string>()));
    if (vm.count("venv")) options.sets.push_back("python.venv=" + quoted_yaml(vm["venv"].as<std::string>()));
    if (vm.count("chdir")) options.sets.push_back("frontend.chdir=" + quoted_yaml(vm["chdir"].as<std::string>()));
    if (vm.count("log-level")) options.sets.push_back("log.level=" + quoted_yaml(vm["log-level"].as<std::string>()));
    if (vm.count("access-log")) {
        options.sets.push_back("log.access=true");
        if (const auto file = vm["access-log"].as<std::string>(); file != "-")
            options.sets.push_back("log.access_file=" + quoted_yaml(file));
    }
    if (vm.count("set"))
        for (const auto& s : vm["set"].as<std::vector<std::string>>()) options.sets.push_back(s);
    options.check_only = vm.count("check") > 0;
    options.command_line = host.command_prefix;
    if (options.command_line.empty()) options.command_line.push_back(argv[0]);
    options.command_line.insert(options.command_line.end(), argv + 1, argv + argc);

    std::vector<std::string> commands;
    if (vm.count("command")) commands = vm["command"].as<std::vector<std::string>>();
    if (!commands.empty()) {
        if (commands[0] == "plugins" && commands.size() == 1) return m0::list_plugins(options);
        if (commands[0] == "plugins") {
            std::cerr << "m0 plugins: unexpected argument '" << commands[1]
                      << "': it takes none (it lists every plugin found, with its kind and description; "
                         "--config FILE adds the file's plugins.path)\nTry 'm0 --help'.\n";
            return 2;
        }
        std::vector<std::string> known = {"plugins"};
        known.insert(known.end(), host.extra_commands.begin(), host.extra_commands.end());
        std::cerr << "m0: unknown command '" << commands[0] << "'";
        if (auto near = m0::nearest_key(commands[0], known)) std::cerr << " (did you mean '" << *near << "'?)";
        if (known.size() == 1) {
            std::cerr << ": the one command is 'plugins'";
        } else {
            std::cerr << ": the commands are";
            for (std::size_t i = 0; i < known.size(); ++i)
                std::cerr << (i == 0 ? " '" : i + 1 == known.size() ? " and '" : ", '") << known[i] << "'";
        }
        std::cerr << "; to serve, give --config FILE or --app module:callable\nTry 'm0 --help'.\n";
        return 2;
    }
    if (options.config_file.empty() && !vm.count("app")) {
        std::cerr << "m0: nothing to serve: give --config FILE or --app module:callable\nTry 'm0 --help'.\n";
        return 2;
    }
    return m0::run_server(options);
}

}  // namespace m0
