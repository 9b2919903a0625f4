// `executor.pool` keys: defaults, values, and errors that name the key.
#define BOOST_TEST_MODULE pool_config
#include <boost/test/unit_test.hpp>

#include <m0/config.hpp>

#include "pool_config.hpp"

using namespace m0::pool;
using namespace std::chrono_literals;

namespace {

pool_options read(const std::string& yaml, const char* env = nullptr, unsigned reactors = 1, unsigned cpus = 2) {
    auto doc = m0::config_document::from_string(yaml, "test.yaml");
    return read_pool_options(doc.root().child("executor").child("pool"), env, reactors, cpus);
}

std::string error_of(const std::string& yaml) {
    try {
        read(yaml);
    } catch (const m0::config_error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

BOOST_AUTO_TEST_CASE(defaults) {
    const auto o = read("executor:\n  type: pool\n");
    BOOST_TEST(o.threads == 1u);
    BOOST_TEST(o.max_threads == default_blocked_max_threads);
    BOOST_TEST((o.growth == growth_kind::blocked));
    BOOST_TEST((o.idle_timeout == 30s));
    BOOST_TEST((o.spin == 0us));
    BOOST_TEST((o.reactor_spin == 0us));
    BOOST_TEST(o.batch_sched);
    BOOST_TEST((o.ring == ring_kind::vyukov));
    BOOST_TEST(o.ring_capacity == 1024u);
    BOOST_TEST((o.max_job_age == 200us));
    BOOST_TEST(!o.colocate);  // auto, one reactor on two cores
}

// colocate: auto is on when the deployment's reactors (workers × threads)
// are at least the cores; true and false as given; the effective value is
// what `m0 --check` shows.
BOOST_AUTO_TEST_CASE(colocate_auto_follows_reactors_and_cores) {
    const std::string none = "executor:\n  type: pool\n";
    BOOST_TEST(!read(none, nullptr, 1, 2).colocate);
    BOOST_TEST(read(none, nullptr, 2, 2).colocate);
    BOOST_TEST(read(none, nullptr, 8, 4).colocate);
    BOOST_TEST(!read(none, nullptr, 3, 4).colocate);
    BOOST_TEST(read("executor:\n  pool:\n    colocate: auto\n", nullptr, 4, 4).colocate);
    BOOST_TEST(read("executor:\n  pool:\n    colocate: true\n", nullptr, 1, 4).colocate);
    BOOST_TEST(read("executor:\n  pool:\n    colocate: on\n", nullptr, 1, 4).colocate);
    BOOST_TEST(!read("executor:\n  pool:\n    colocate: false\n", nullptr, 4, 4).colocate);
    for (const auto& [reactors, shown] : {std::pair{1u, "colocate: false"}, std::pair{2u, "colocate: true"}}) {
        auto doc = m0::config_document::from_string(none, "test.yaml");
        (void)read_pool_options(doc.root().child("executor").child("pool"), nullptr, reactors, 2);
        BOOST_TEST(doc.effective_yaml().find(shown) != std::string::npos, doc.effective_yaml());
    }
}

// growth: auto — with neither threads nor max_threads the pool grows while
// its threads are blocked, up to 32; a user who set either keeps the eager
// growth of before, max_threads defaulting to threads; `growth` overrides,
// and the effective value is what `m0 --check` shows.
BOOST_AUTO_TEST_CASE(growth_follows_whether_the_pool_was_sized) {
    const auto pool = [](const std::string& keys) { return read("executor:\n  pool:\n" + keys); };
    BOOST_TEST((pool("    growth: auto\n").growth == growth_kind::blocked));
    for (const std::string sized : {"    threads: 1\n", "    threads: 4\n", "    max_threads: 8\n"}) {
        const auto o = pool(sized);
        BOOST_TEST((o.growth == growth_kind::eager), sized);
    }
    BOOST_TEST(pool("    threads: 4\n").max_threads == 4u);
    BOOST_TEST(pool("    max_threads: 8\n").threads == 1u);
    BOOST_TEST(pool("    max_threads: 8\n").max_threads == 8u);
    const auto blocked = pool("    threads: 2\n    max_threads: 64\n    growth: blocked\n");
    BOOST_TEST((blocked.growth == growth_kind::blocked));
    BOOST_TEST(blocked.max_threads == 64u);
    BOOST_TEST(pool("    threads: 40\n    growth: blocked\n").max_threads == 40u);
    const auto eager = pool("    growth: eager\n");
    BOOST_TEST((eager.growth == growth_kind::eager));
    BOOST_TEST(eager.max_threads == 1u);
    BOOST_TEST(error_of("executor:\n  pool:\n    growth: lazy\n").find("executor.pool.growth") != std::string::npos);
    for (const auto& [yaml, shown] : {std::pair{"executor:\n  type: pool\n", "growth: blocked"},
                                      std::pair{"executor:\n  pool:\n    threads: 2\n", "growth: eager"}}) {
        auto doc = m0::config_document::from_string(yaml, "test.yaml");
        (void)read_pool_options(doc.root().child("executor").child("pool"), nullptr, 1, 2);
        BOOST_TEST(doc.effective_yaml().find(shown) != std::string::npos, doc.effective_yaml());
    }
}

BOOST_AUTO_TEST_CASE(every_key) {
    const auto o = read(
        "executor:\n  pool:\n    threads: 4\n    max_threads: 16\n    idle_timeout: 5s\n"
        "    spin: 50us\n    reactor_spin: 5us\n    batch_sched: false\n    ring: lockfree\n"
        "    ring_capacity: 256\n    max_job_age: 1ms\n    colocate: true\n");
    BOOST_TEST(o.threads == 4u);
    BOOST_TEST(o.max_threads == 16u);
    BOOST_TEST((o.idle_timeout == 5s));
    BOOST_TEST((o.spin == 50us));
    BOOST_TEST((o.reactor_spin == 5us));
    BOOST_TEST(!o.batch_sched);
    BOOST_TEST((o.ring == ring_kind::lockfree));
    BOOST_TEST(o.ring_capacity == 256u);
    BOOST_TEST((o.max_job_age == 1ms));
    BOOST_TEST(o.colocate);
}

BOOST_AUTO_TEST_CASE(every_error_of_the_section_is_reported_in_one_run) {
    const auto e = error_of("executor:\n  pool:\n    threds: 2\n    spin: 5s\n    ring: fast\n"
                            "    ring_capacity: 1000\n    max_job_age: 0s\n    colocate: sometimes\n");
    for (const auto* error :
         {"test.yaml:3:5: executor.pool.threds: unknown key 'threds' (did you mean 'threads'?)",
          "test.yaml:4:11: executor.pool.spin: expected a duration in 0..1s",
          "test.yaml:5:11: executor.pool.ring: expected one of vyukov, lockfree, none, found 'fast'",
          "test.yaml:6:20: executor.pool.ring_capacity: expected a power of two, found 1000",
          "test.yaml:7:18: executor.pool.max_job_age: expected a duration > 0",
          "executor.pool.colocate: expected auto or a boolean (true/false, yes/no, on/off), found 'sometimes'"})
        BOOST_TEST(e.find(error) != std::string::npos, "missing '" << error << "' in\n" << e);
}

BOOST_AUTO_TEST_CASE(max_threads_defaults_to_threads) {
    BOOST_TEST(read("executor:\n  pool:\n    threads: 3\n").max_threads == 3u);
}

BOOST_AUTO_TEST_CASE(env_off_switch_forces_no_ring) {
    BOOST_TEST((read("executor:\n  pool:\n    ring: vyukov\n", "0").ring == ring_kind::none));
    BOOST_TEST((read("executor:\n  pool:\n    ring: vyukov\n", "1").ring == ring_kind::vyukov));
}

// `m0 --check` prints the effective configuration: the ring that will run.
BOOST_AUTO_TEST_CASE(env_off_switch_is_the_effective_ring) {
    const std::string yaml = "executor:\n  pool:\n    ring: vyukov\n";
    for (const char* env : {"0", "1"}) {
        auto doc = m0::config_document::from_string(yaml, "test.yaml");
        (void)read_pool_options(doc.root().child("executor").child("pool"), env, 1, 2);
        const bool off = std::string(env) == "0";
        BOOST_TEST(doc.effective_yaml().find(off ? "ring: none" : "ring: vyukov") != std::string::npos,
                   doc.effective_yaml());
        BOOST_TEST(doc.effective_yaml().find(off ? "vyukov" : "none") == std::string::npos, doc.effective_yaml());
    }
}

BOOST_AUTO_TEST_CASE(errors_name_the_key) {
    BOOST_TEST(error_of("executor:\n  pool:\n    ring_capacity: 1000\n").find("ring_capacity") != std::string::npos);
    BOOST_TEST(error_of("executor:\n  pool:\n    ring: spsc\n").find("ring") != std::string::npos);
    BOOST_TEST(error_of("executor:\n  pool:\n    threads: 2\n    max_threads: 1\n").find("max_threads") !=
               std::string::npos);
    BOOST_TEST(error_of("executor:\n  pool:\n    thread: 2\n").find("thread") != std::string::npos);
    BOOST_TEST(error_of("executor:\n  pool:\n    threads: 0\n").find("threads") != std::string::npos);
}
