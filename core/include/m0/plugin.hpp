#pragma once
// The plugin descriptor: the one symbol every m0 plugin exports, and what a
// plugin factory receives.
//
// A plugin is a shared object exporting `m0_plugin_descriptor`, a constant of
// type m0::plugin_descriptor. The loader checks magic, ABI and build signature
// before touching anything else in it, so every field that the check reads
// must keep its offset forever: append new fields at the end only.
//
// ABI policy (docs/plugins.md): the seams are C++ classes whose layout and
// vtables change between m0 releases, so a plugin runs only with the m0
// release, compiler, standard library ABI and Boost it was built with — the
// build signature says so and the loader demands an exact match. abi_major
// and abi_minor version the descriptor struct alone: a field appended bumps
// the minor, anything else the major.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <m0/api.hpp>
#include <m0/version.hpp>

namespace m0 {

class config_node;
class executor;
class frontend;
class module;
class scheduler;
class service_registry;

inline constexpr std::uint32_t plugin_magic = 0x4d30504cu;  // "M0PL"
// Major: bumped on any incompatible change of the seams. Minor: bumped when
// fields are appended; a core accepts plugins of its own minor or older.
inline constexpr std::uint16_t plugin_abi_major = 1;
inline constexpr std::uint16_t plugin_abi_minor = 2;  // 1: make_module, 2: make_scheduler
inline constexpr const char* plugin_symbol_name = "m0_plugin_descriptor";

enum class plugin_kind : std::uint32_t { frontend = 1, executor = 2, module = 3, scheduler = 4 };

M0_API const char* to_string(plugin_kind kind) noexcept;

// What a plugin factory receives.
struct plugin_context {
    // The plugin's own section: `frontend:` (or a mount's), `executor.<type>:`
    // (or a named executor's), `scheduler:`, or a module's top-level section.
    const config_node* section = nullptr;
    const config_node* root = nullptr;  // the whole document (read-only use)
    unsigned reactor_count = 1;          // reactor threads per serving process (server.threads)
    unsigned process_count = 1;         // serving processes (server.workers)
    service_registry* services = nullptr;
};

struct plugin_descriptor {
    std::uint32_t magic;
    std::uint16_t abi_major;
    std::uint16_t abi_minor;
    std::uint32_t struct_size;       // sizeof(plugin_descriptor) as the plugin saw it
    const char* build_signature;     // M0_BUILD_SIGNATURE of the plugin's build
    const char* name;                // what `frontend.type` / `executor.type` names
    plugin_kind kind;
    const char* description;         // one line, shown by `m0 plugins`
    // Exactly one of these is set, matching `kind`. Factories validate their
    // own config section and throw m0::config_error on a bad value.
    std::unique_ptr<frontend> (*make_frontend)(plugin_context& ctx);
    std::unique_ptr<executor> (*make_executor)(plugin_context& ctx);
    // ABI minor 1.
    std::unique_ptr<module> (*make_module)(plugin_context& ctx);
    // ABI minor 2.
    std::unique_ptr<scheduler> (*make_scheduler)(plugin_context& ctx);
};

}  // namespace m0

// Declares the plugin's descriptor. Use once per plugin, at namespace scope:
//   M0_FRONTEND_PLUGIN("http", "static files and fixed routes", make_http_frontend)
#define M0_PLUGIN_DESCRIPTOR_IMPL(NAME, KIND, DESC, FRONTEND_FACTORY, EXECUTOR_FACTORY,        \
                                  MODULE_FACTORY, SCHEDULER_FACTORY)                             \
    extern "C" __attribute__((visibility("default"))) const ::m0::plugin_descriptor            \
        m0_plugin_descriptor = {::m0::plugin_magic,                                             \
                                ::m0::plugin_abi_major,                                         \
                                ::m0::plugin_abi_minor,                                         \
                                static_cast<std::uint32_t>(sizeof(::m0::plugin_descriptor)),    \
                                M0_BUILD_SIGNATURE,                                             \
                                NAME,                                                           \
                                KIND,                                                           \
                                DESC,                                                           \
                                FRONTEND_FACTORY,                                               \
                                EXECUTOR_FACTORY,                                               \
                                MODULE_FACTORY,                                                 \
                                SCHEDULER_FACTORY}

#define M0_FRONTEND_PLUGIN(NAME, DESC, FACTORY) \
    M0_PLUGIN_DESCRIPTOR_IMPL(NAME, ::m0::plugin_kind::frontend, DESC, FACTORY, nullptr, nullptr, nullptr)
#define M0_EXECUTOR_PLUGIN(NAME, DESC, FACTORY) \
    M0_PLUGIN_DESCRIPTOR_IMPL(NAME, ::m0::plugin_kind::executor, DESC, nullptr, FACTORY, nullptr, nullptr)
// A module is loaded when the deployment has a top-level section named NAME.
#define M0_MODULE_PLUGIN(NAME, DESC, FACTORY) \
    M0_PLUGIN_DESCRIPTOR_IMPL(NAME, ::m0::plugin_kind::module, DESC, nullptr, nullptr, FACTORY, nullptr)
// A scheduler is chosen by `scheduler.type: NAME` (m0/scheduler.hpp).
#define M0_SCHEDULER_PLUGIN(NAME, DESC, FACTORY) \
    M0_PLUGIN_DESCRIPTOR_IMPL(NAME, ::m0::plugin_kind::scheduler, DESC, nullptr, nullptr, nullptr, FACTORY)
