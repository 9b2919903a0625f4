#include "server/deployment.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <m0/log.hpp>
#include <m0/plugin.hpp>

#include "config/tls_config.hpp"
#include "plugin/plugin_choice.hpp"

namespace m0 {
namespace {

// After the drain, how long executor threads still inside application code
// get to return before the process exits without them.
constexpr std::chrono::milliseconds executor_stop_grace{500};

log::level parse_level(const std::string& s) {
    if (s == "debug") return log::level::debug;
    if (s == "warning") return log::level::warning;
    if (s == "error") return log::level::error;
    return log::level::info;
}

plugin_context context_for(deployment& d, const config_node& section, const config_node& root) {
    plugin_context ctx;
    ctx.section = &section;
    ctx.root = &root;
    ctx.reactor_count = std::max(1u, d.cfg.threads);  // 0 only when server.threads had an error
    ctx.process_count = d.cfg.workers;
    ctx.services = d.services.get();
    return ctx;
}

std::unique_ptr<executor> make_executor(deployment& d, const executor_spec& spec) {
    if (spec.type == "inline") return make_inline_executor();
    config_node root = d.doc.root();
    plugin_context ectx = context_for(d, spec.section, root);
    const auto& ep = load_chosen_plugin(*d.loader, plugin_kind::executor, spec.type, spec.owner, "type", {"inline"});
    auto ex = ep.descriptor->make_executor(ectx);
    if (!ex) throw std::runtime_error("executor plugin '" + spec.type + "' returned no executor");
    return ex;
}

std::unique_ptr<frontend> make_frontend(deployment& d, const std::string& type, const config_node& section,
                                        const config_node& root) {
    plugin_context fctx = context_for(d, section, root);
    const auto& fp = load_chosen_plugin(*d.loader, plugin_kind::frontend, type, section, "type");
    auto fe = fp.descriptor->make_frontend(fctx);
    if (!fe) throw std::runtime_error("frontend plugin '" + type + "' returned no frontend");
    return fe;
}

// Runs one step of building the deployment, keeping its error so that the
// steps after it still run: a plugin refused or failing to build (its
// factory threw) is reported with the others, and only its section goes
// unchecked. Returns false on an error.
template <class Step>
bool collect(config_errors& errors, Step&& step) {
    try {
        return errors.check(step);
    } catch (const std::exception& e) {
        errors.add(config_error(e.what()));
        return false;
    }
}

// The executors `executors:` and `executor:` declare, then the frontends,
// each on the executor it names or on an unnamed one of its default type
// (settings from `executor.<type>` if present, as without mounts). A
// frontend that fails to build is left out (its error kept in `errors`),
// and so is its unnamed executor, whose type it would have said. Returns
// whether every frontend was built.
bool build_frontends(deployment& d, const config_node& root, config_errors& errors) {
    for (const auto& e : d.cfg.executors) {
        const config_node owner = e.name == "default" ? root.child("executor") : root.child("executors").child(e.name);
        d.executor_specs.push_back({e.name, e.type, owner.child(e.type), owner});
    }
    auto executor_for = [&](const std::string& name, const frontend& fe) -> std::size_t {
        for (std::size_t i = 0; i < d.executor_specs.size(); ++i)
            if (!name.empty() && d.executor_specs[i].name == name) return i;
        const std::string type = fe.default_executor();
        d.executor_specs.push_back({"", type, root.child("executor").child(type), root.child("executor")});
        return d.executor_specs.size() - 1;
    };
    if (d.cfg.mounts.empty()) {
        // Empty when the core's checks of `frontend:` or `mounts:` failed.
        if (d.cfg.frontend_type.empty()) return false;
        std::unique_ptr<frontend> fe;
        if (!collect(errors, [&] { fe = make_frontend(d, d.cfg.frontend_type, root.child("frontend"), root); }))
            return false;
        // Records the frontend's default as effective, so --check shows which executor runs.
        if (d.cfg.executor_type.empty()) (void)root.child("executor").string("type", fe->default_executor());
        const std::size_t ex = executor_for(d.cfg.executor_type.empty() ? "" : "default", *fe);
        d.frontends.push_back({"", d.cfg.frontend_type, std::move(fe), ex, d.cfg.request_timeout});
        return true;
    }
    const auto items = root.child("mounts").items();
    bool all = true;
    for (const auto& m : d.cfg.mounts) {
        std::unique_ptr<frontend> fe;
        if (!collect(errors, [&] { fe = make_frontend(d, m.frontend_type, items[m.index].child("frontend"), root); })) {
            all = false;
            continue;
        }
        const std::size_t ex = executor_for(m.executor, *fe);
        d.frontends.push_back(
            {m.prefix, m.frontend_type, std::move(fe), ex, m.request_timeout.value_or(d.cfg.request_timeout)});
    }
    return all;
}

// An executor's name as logs and metrics give it: from `executors:`,
// "default", or for a mount's unnamed executor its mount's prefix.
std::string executor_name(const deployment& d, std::size_t index) {
    std::string name = d.executor_specs[index].name;
    for (const auto& f : d.frontends)
        if (name.empty() && f.executor == index) name = f.prefix.empty() ? "/" : f.prefix;
    return name;
}

// After every plugin validated its section: what no getter read is read by
// nothing, a section a plugin of another deployment would read, or a typo.
void refuse_unread_sections(const deployment& d, const config_node& root, config_errors& errors) {
    for (const auto& name : d.doc.unread_sections()) {
        errors.check([&] {
            if (std::find(core_sections.begin(), core_sections.end(), name) != core_sections.end())
                root.child(name).fail("", "section '" + name + "' is read by nothing in this deployment");
            root.child(name).fail("", "unknown section '" + name + "': neither a core section nor a module plugin (m0-module-" +
                                          name + ".so) found in the plugin path, and no plugin of this deployment reads it");
        });
    }
}

// A top-level section the core does not own is a module plugin's when one of
// that name is found: the module is built. Otherwise it is left to the other
// plugins (`python` is read by those that embed CPython) and refused once
// every plugin was built if none read it (null here). A likely typo of a core
// section is refused at once.
std::unique_ptr<module> make_module(deployment& d, const std::string& name, const config_node& root) {
    const config_node section = root.child(name);
    const loaded_plugin* plugin = nullptr;
    try {
        plugin = &d.loader->load(plugin_kind::module, name);
    } catch (const plugin_error& e) {
        const std::string why = e.what();
        if (why.rfind("no module plugin", 0) != 0 && why.rfind("invalid module plugin name", 0) != 0) throw;
        if (auto near = nearest_key(name, core_sections))
            section.fail("", "unknown section '" + name + "' (did you mean '" + *near + "'?)");
        return nullptr;
    }
    plugin_context ctx = context_for(d, section, root);
    auto m = plugin->descriptor->make_module(ctx);
    if (!m) throw std::runtime_error("module plugin '" + name + "' returned no module");
    return m;
}

// `scheduler:`: the scheduler plugin that runs this deployment's reactors.
std::unique_ptr<m0::scheduler> make_scheduler(deployment& d, const config_node& root) {
    const config_node section = root.child("scheduler");
    plugin_context ctx = context_for(d, section, root);
    const auto& sp = load_chosen_plugin(*d.loader, plugin_kind::scheduler, d.cfg.scheduler_type, section, "type");
    auto s = sp.descriptor->make_scheduler(ctx);
    if (!s) throw std::runtime_error("scheduler plugin '" + d.cfg.scheduler_type + "' returned no scheduler");
    return s;
}

// The `tls:` section read, and every file it names checked by building the
// contexts now: a TLS error stops m0 (and --check) like any config error.
// Without the section no listener may be marked tls. False when the section
// is not a map: then none of it was read (and it is no unknown section).
bool load_tls(deployment& d, const config_node& root, config_errors& errors) {
    const config_node section = root.child("tls");
    bool marked = false;
    for (const auto& l : d.cfg.listen) marked = marked || l.tls;
    if (!section.present()) {
        for (const auto& l : d.cfg.listen)
            if (l.tls)
                errors.add(config_error(root.child("server").child("listen").where() + ": server.listen: '" + l.text +
                                        "' is marked tls but there is no tls: section (with its cert and key)"));
        return true;
    }
    const std::size_t before = errors.size();
    auto settings = parse_tls_config(section, errors);
    if (errors.size() > before) return section.is_map();
    // ALPN offers h2 first when some TLS listener speaks it (those that do
    // not limit their connections to http/1.1).
    for (const auto& l : d.cfg.listen)
        if (l.tls && l.http2.value_or(d.cfg.http2.enabled)) {
            settings.alpn = {"h2", "http/1.1"};
            break;
        }
    tls::load_report report;
    d.tls = tls::server_context::load(settings, report);
    for (const auto& e : report.errors) errors.add(config_error(tls_key_named_by(section, e).where() + ": " + e));
    for (const auto& w : report.warnings) log::warning(w);
    if (d.tls && !marked)
        log::warning("tls: no listener in server.listen is marked tls (add ' tls' to an address: '0.0.0.0:443 tls')");
    d.tls_settings = std::move(settings);
    return true;
}

}  // namespace

config_document load_document(const run_options& options) {
    auto doc = options.config_file.empty() ? config_document::from_string("", "<defaults>")
                                           : config_document::load(options.config_file);
    for (const auto& s : options.sets) doc.set(s);
    return doc;
}

std::vector<std::string> search_dirs_for(const server_config& cfg) {
    return plugin_loader::default_search_dirs(cfg.plugin_paths);
}

void make_executors(deployment& d) {
    d.executors.clear();
    for (const auto& spec : d.executor_specs) d.executors.push_back(make_executor(d, spec));
}

std::vector<executor*> executor_pointers(const deployment& d) {
    std::vector<executor*> out;
    for (const auto& ex : d.executors) out.push_back(ex.get());
    return out;
}

std::string describe_executors(const deployment& d) {
    if (d.executors.size() == 1) return "executor " + std::string(d.executors.front()->name());
    std::string out = "executors";
    for (std::size_t i = 0; i < d.executors.size(); ++i)
        out.append(" ").append(executor_name(d, i)).append("=").append(d.executors[i]->name());
    return out;
}

unsigned stop_executors(deployment& d) {
    unsigned stuck = 0;
    for (auto& ex : d.executors) stuck += ex->stop(executor_stop_grace);
    return stuck;
}

std::vector<std::optional<unix_socket_spec>> unix_listeners(const server_config& cfg) {
    std::vector<std::optional<unix_socket_spec>> out;
    for (const auto& l : cfg.listen) out.push_back(l.unix);
    return out;
}

bool has_unix_listener(const server_config& cfg) {
    return std::any_of(cfg.listen.begin(), cfg.listen.end(), [](const listen_address& l) { return l.unix.has_value(); });
}

std::string describe_listening(const server_config& cfg, const std::vector<boost::asio::ip::tcp::endpoint>& bound) {
    std::ostringstream out;
    for (std::size_t i = 0; i < bound.size(); ++i) {
        out << " ";
        if (i < cfg.listen.size() && cfg.listen[i].unix) out << "unix:" << cfg.listen[i].unix->path;
        else out << bound[i];
    }
    return out.str();
}

std::string describe_frontends(const deployment& d) {
    if (d.cfg.mounts.empty()) return "frontend " + d.cfg.frontend_type;
    std::string out = "mounts";
    for (const auto& f : d.frontends) out += " " + (f.prefix.empty() ? std::string("/") : f.prefix) + "=" + f.type;
    return out;
}

deployment build_deployment(const run_options& options) {
    deployment d{load_document(options), {}, nullptr, std::make_unique<service_registry>(), {}, {}, nullptr, {}, {},
                 nullptr, std::nullopt, nullptr, nullptr, std::nullopt, nullptr};
    config_node root = d.doc.root();
    config_errors errors;
    d.cfg = parse_server_config(root, errors);
    log::set_level(parse_level(d.cfg.log_level));
    d.loader = std::make_unique<plugin_loader>(search_dirs_for(d.cfg));
    bool all_built = d.cfg.frontend_group_valid;
    bool tls_read = false;
    all_built &= collect(errors, [&] { tls_read = load_tls(d, root, errors); }) && tls_read;

    // Modules first: they provide services the frontends may look up.
    for (const auto& name : d.cfg.module_sections)
        all_built &= collect(errors, [&] {
            if (auto m = make_module(d, name, root)) d.modules.push_back(std::move(m));
        });
    all_built &= build_frontends(d, root, errors);
    if (all_built && d.cfg.executor_type.empty()) {
        std::vector<std::string> types;  // of the executors `executor:` configures: the unnamed ones
        for (const auto& spec : d.executor_specs)
            if (spec.name.empty()) types.push_back(spec.type);
        all_built &= collect(errors, [&] { check_default_executor_settings(root.child("executor"), types); });
    }
    for (const auto& spec : d.executor_specs)
        all_built &= collect(errors, [&] { d.executors.push_back(make_executor(d, spec)); });
    all_built &= collect(errors, [&] { d.scheduler = make_scheduler(d, root); });

    // A plugin that was not built (or stopped at an error) did not read all
    // of what it reads: its sections would look unread.
    if (all_built) refuse_unread_sections(d, root, errors);
    errors.throw_if_any();

    std::vector<module*> modules;
    for (auto& m : d.modules) modules.push_back(m.get());
    std::vector<mount_part> mounts;
    for (auto& f : d.frontends) mounts.push_back({f.prefix, f.type, f.fe.get(), f.executor, f.request_timeout});
    d.composed = std::make_unique<composed_frontend>(std::move(mounts), std::move(modules), d.cfg.threads);
    return d;
}

void setup_telemetry(deployment& d) {
    if (d.cfg.access_log) {
        d.access_format = d.cfg.access_log_json ? telemetry::access_log_format::json()
                                                : telemetry::access_log_format::text(d.cfg.access_log_format);
        if (!d.cfg.access_log_file.empty()) {
            // Each serving process opens it for itself; say once if it cannot.
            const int fd = ::open(d.cfg.access_log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0)
                throw std::runtime_error("cannot open access log '" + d.cfg.access_log_file +
                                         "': " + std::strerror(errno));
            ::close(fd);
        }
    }
    if (!d.cfg.metrics_listen) return;
    std::vector<telemetry::mount_label> mounts;
    for (const auto& f : d.frontends) mounts.push_back({f.prefix, f.type});
    // A supervisor's processes overlap those they replace (a reload doubles
    // them for a moment), and SIGTTIN adds some: room for those too.
    const unsigned spare = d.cfg.workers > 1 ? d.cfg.workers + 4 : 0;
    std::vector<telemetry::executor_label> executors;
    for (std::size_t i = 0; i < d.executor_specs.size(); ++i)
        executors.push_back({executor_name(d, i), d.executor_specs[i].type});
    d.metrics = std::make_unique<telemetry::metrics_table>(d.cfg.workers, d.cfg.threads, std::move(mounts),
                                                           std::move(executors), spare);
    d.metrics_server = std::make_unique<telemetry::metrics_server>(d.cfg.metrics_listen->endpoint, *d.metrics);
    std::ostringstream line;
    line << "metrics: /metrics and /status.json on http://" << d.cfg.metrics_listen->endpoint
         << " (live page: /status)";
    log::info(line.str());
}

}  // namespace m0
