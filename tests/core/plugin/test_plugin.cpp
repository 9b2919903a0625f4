// A plugin for the loader tests, built once per case with one descriptor
// field altered by a compile definition (see CMakeLists.txt). The descriptor
// is written out by hand rather than with M0_FRONTEND_PLUGIN so that any
// field can be made wrong.
#include <memory>

#include <m0/frontend.hpp>
#include <m0/module.hpp>
#include <m0/plugin.hpp>
#include <m0/scheduler.hpp>

#ifndef TEST_MAGIC
#define TEST_MAGIC ::m0::plugin_magic
#endif
#ifndef TEST_ABI_MAJOR
#define TEST_ABI_MAJOR ::m0::plugin_abi_major
#endif
#ifndef TEST_ABI_MINOR
#define TEST_ABI_MINOR ::m0::plugin_abi_minor
#endif
#ifndef TEST_STRUCT_SIZE
#define TEST_STRUCT_SIZE sizeof(::m0::plugin_descriptor)
#endif
#ifndef TEST_BUILD_SIGNATURE
#define TEST_BUILD_SIGNATURE M0_BUILD_SIGNATURE
#endif
#ifndef TEST_NAME
#define TEST_NAME "good"
#endif

namespace {

#ifdef TEST_UNRESOLVED
// Declared, never defined anywhere: dlopen(RTLD_NOW) must fail on it.
extern "C" int m0_test_symbol_defined_nowhere();
#endif

// Answers nothing; the tests only check that the factory runs this code.
class test_frontend final : public m0::frontend {
public:
    void start_reactor(m0::reactor_context&) override {
#ifdef TEST_UNRESOLVED
        m0_test_symbol_defined_nowhere();
#endif
    }
    const char* default_executor() const override { return "from-test-plugin"; }
};

[[maybe_unused]] std::unique_ptr<m0::frontend> make_test_frontend(m0::plugin_context&) {
    return std::make_unique<test_frontend>();
}

#if defined(TEST_KIND_EXECUTOR)
// Only present so the descriptor is a valid executor one; never called.
std::unique_ptr<m0::executor> make_test_executor(m0::plugin_context&) { return nullptr; }
#define TEST_KIND m0::plugin_kind::executor
#define TEST_FRONTEND_FACTORY nullptr
#define TEST_EXECUTOR_FACTORY make_test_executor
#define TEST_MODULE_FACTORY nullptr
#elif defined(TEST_KIND_SCHEDULER)
// Only present so the descriptor is a valid scheduler one; never called.
std::unique_ptr<m0::scheduler> make_test_scheduler(m0::plugin_context&) { return nullptr; }
#define TEST_KIND m0::plugin_kind::scheduler
#define TEST_FRONTEND_FACTORY nullptr
#define TEST_EXECUTOR_FACTORY nullptr
#define TEST_MODULE_FACTORY nullptr
#define TEST_SCHEDULER_FACTORY make_test_scheduler
#elif defined(TEST_KIND_MODULE)
class test_module final : public m0::module {};
[[maybe_unused]] std::unique_ptr<m0::module> make_test_module(m0::plugin_context&) {
    return std::make_unique<test_module>();
}
#define TEST_KIND m0::plugin_kind::module
#define TEST_FRONTEND_FACTORY nullptr
#define TEST_EXECUTOR_FACTORY nullptr
#ifdef TEST_NO_FACTORY
#define TEST_MODULE_FACTORY nullptr
#else
#define TEST_MODULE_FACTORY make_test_module
#endif
#else
#define TEST_KIND m0::plugin_kind::frontend
#define TEST_FRONTEND_FACTORY make_test_frontend
#define TEST_EXECUTOR_FACTORY nullptr
#define TEST_MODULE_FACTORY nullptr
#endif
#ifndef TEST_SCHEDULER_FACTORY
#define TEST_SCHEDULER_FACTORY nullptr
#endif

}  // namespace

#ifndef TEST_NO_DESCRIPTOR
extern "C" __attribute__((visibility("default"))) const m0::plugin_descriptor m0_plugin_descriptor = {
    TEST_MAGIC,
    TEST_ABI_MAJOR,
    TEST_ABI_MINOR,
    static_cast<std::uint32_t>(TEST_STRUCT_SIZE),
    TEST_BUILD_SIGNATURE,
    TEST_NAME,
    TEST_KIND,
    "loader test plugin",
    TEST_FRONTEND_FACTORY,
    TEST_EXECUTOR_FACTORY,
    TEST_MODULE_FACTORY,
    TEST_SCHEDULER_FACTORY,
};
#endif
