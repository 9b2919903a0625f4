// The GIL kept from one job to the next: only on a thread whose executor
// calls the idle hook, given up by that hook, after max_kept_jobs scopes in
// a row, and at detach; and a thread waiting for it is never starved by a
// thread that keeps it.
#define BOOST_TEST_MODULE python_gil_keep
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/ref.hpp>

namespace py = m0::python;

namespace {

struct interpreter {
    interpreter() { py::start(py::interpreter_settings{}); }
};

// Runs fn on a fresh thread attached to the interpreter (as an executor's
// on_start does) and detaches it after.
template <class F>
void on_executor_thread(F fn) {
    std::thread t([&] {
        py::attach_thread();
        fn();
        py::detach_thread();
    });
    t.join();
}

bool holds_gil() { return PyGILState_Check() == 1; }

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(interpreter);

BOOST_AUTO_TEST_CASE(a_thread_whose_executor_never_calls_the_idle_hook_gives_the_gil_up_after_each_scope) {
    on_executor_thread([] {
        for (int i = 0; i < 3; ++i) {
            {
                py::gil_scope gil;
                BOOST_TEST(holds_gil());
            }
            BOOST_TEST(!holds_gil());
        }
    });
}

BOOST_AUTO_TEST_CASE(after_the_idle_hook_the_gil_is_kept_between_scopes_until_the_next_idle) {
    std::promise<void> released;
    std::thread other;
    on_executor_thread([&] {
        py::release_kept_gil();  // the executor's first on_idle
        BOOST_TEST(!holds_gil());
        {
            py::gil_scope gil;
        }
        BOOST_TEST(holds_gil());  // kept
        {
            py::gil_scope gil;  // finds it held: no deadlock on our own GIL
            BOOST_TEST(holds_gil());
        }
        BOOST_TEST(holds_gil());
        py::release_kept_gil();
        BOOST_TEST(!holds_gil());
        // Another thread takes it now that it is given up.
        other = std::thread([&] {
            py::gil_scope gil;
            released.set_value();
        });
        BOOST_TEST((released.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready));
    });
    other.join();
}

BOOST_AUTO_TEST_CASE(the_gil_is_given_up_after_max_kept_jobs_scopes_in_a_row) {
    on_executor_thread([] {
        py::release_kept_gil();
        for (unsigned i = 1; i < py::max_kept_jobs; ++i) {
            { py::gil_scope gil; }
            BOOST_REQUIRE_MESSAGE(holds_gil(), "scope " << i);
        }
        { py::gil_scope gil; }
        BOOST_TEST(!holds_gil());
        // The count starts again.
        { py::gil_scope gil; }
        BOOST_TEST(holds_gil());
        py::release_kept_gil();
    });
}

BOOST_AUTO_TEST_CASE(detaching_a_thread_that_keeps_the_gil_gives_it_up) {
    on_executor_thread([] {
        py::release_kept_gil();
        { py::gil_scope gil; }
        BOOST_TEST(holds_gil());
    });  // detach_thread with the GIL kept
    // This thread (not attached: PyGILState) gets it.
    py::gil_scope gil;
    BOOST_TEST(holds_gil());
}

// A thread keeping the GIL across back-to-back scopes that run Python code
// lets a thread waiting for the GIL in: CPython asks the holder to drop it,
// and the bound of kept scopes makes sure of it.
BOOST_AUTO_TEST_CASE(a_waiting_thread_gets_the_gil_from_a_thread_that_keeps_it) {
    std::atomic<bool> waiter_ran{false};
    std::thread waiter;
    bool got_in = false;
    on_executor_thread([&] {
        py::release_kept_gil();
        py::py_ref sum_fn;
        {
            py::gil_scope gil;
            sum_fn = py::py_ref(PyRun_String("lambda: sum(range(100))", Py_eval_input,
                                             PyModule_GetDict(PyImport_AddModule("__main__")),
                                             PyModule_GetDict(PyImport_AddModule("__main__"))));
            BOOST_REQUIRE(sum_fn);
        }
        waiter = std::thread([&] {
            py::gil_scope gil;
            waiter_ran = true;
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!waiter_ran.load() && std::chrono::steady_clock::now() < deadline) {
            py::gil_scope gil;  // a job: some bytecode, then the scope ends with the GIL kept
            py::py_ref r(PyObject_CallNoArgs(sum_fn.get()));
            BOOST_REQUIRE(r);
        }
        got_in = waiter_ran.load();
        {
            py::gil_scope gil;
            sum_fn = py::py_ref();
        }
        py::release_kept_gil();
    });
    waiter.join();
    BOOST_TEST(got_in);
}
