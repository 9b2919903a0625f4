// python::start_task_eagerly: the Task's first step runs before the call
// returns, inside that Task (current_task, its own context), and from then
// on it is an ordinary asyncio Task: it waits, is woken, is cancelled and
// keeps its exception as one made by loop.create_task(). Each case is a
// Python function run as a loop callback (outside any Task, where the
// frontends call it) that returns "ok" or what it found instead.
#define BOOST_TEST_MODULE python_eager_task
#include <boost/test/unit_test.hpp>

#include <string>

#include <m0/python/eager_task.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/gil.hpp>
#include <m0/python/interpreter.hpp>
#include <m0/python/ref.hpp>

namespace py = m0::python;

namespace {

constexpr const char* cases = R"PY(
import asyncio
import contextvars
import sys

var = contextvars.ContextVar("var", default="unset")


def on_loop(case, loop=None):
    """Runs case(loop) as a callback of a fresh loop, then lets the loop run
    until every Task is done; returns what case returned, or its error."""
    loop = loop or asyncio.new_event_loop()
    outcome = []

    def callback():
        try:
            outcome.append(case(loop))
        except BaseException as e:
            outcome.append(f"raised {e!r}")

    async def settle():
        loop.call_soon(callback)
        # Bounded: a case that fails may leave a Task waiting for good.
        for _ in range(1000):
            if outcome and len(asyncio.all_tasks(loop)) == 1:
                return
            await asyncio.sleep(0)
        outcome.append("Tasks still pending after 1000 iterations")

    try:
        loop.run_until_complete(settle())
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.close()
    return outcome[0]


def answers_at_once(loop):
    seen = {}

    async def handler():
        seen["task"] = asyncio.current_task()
        return 42

    task = start(loop, handler())
    if not task.done():
        return "not done when start returned"
    if seen["task"] is not task:
        return f"current_task() in the first step was {seen['task']!r}, not the Task"
    if task.result() != 42:
        return f"result {task.result()!r}"
    if "call_soon" in vars(loop):
        return "loop.call_soon still shadowed"
    return "ok"


def waits_then_finishes(loop):
    steps = []
    fut = loop.create_future()

    async def handler():
        steps.append("first")
        value = await fut
        steps.append(("woken", value, asyncio.current_task() is task))

    task = start(loop, handler())
    if task.done() or steps != ["first"]:
        return f"after start: done={task.done()} steps={steps}"
    finished = loop.create_future()
    task.add_done_callback(lambda t: finished.set_result(steps[:]))
    loop.call_soon(fut.set_result, "value")

    async def check():
        got = await finished
        if got != ["first", ("woken", "value", True)]:
            raise AssertionError(f"steps {got}")

    global pending
    pending = loop.create_task(check())
    return "ok"


def own_context(loop):
    var.set("caller")

    async def handler():
        before = var.get()
        var.set("handler")
        return before

    task = start(loop, handler())
    if task.result() != "caller":
        return f"the handler saw {task.result()!r}, not the caller's value"
    if var.get() != "caller":
        return f"the handler's set() leaked out: {var.get()!r}"
    return "ok"


def exception_is_the_tasks(loop):
    async def handler():
        raise ValueError("from the handler")

    task = start(loop, handler())
    if not task.done():
        return "not done"
    e = task.exception()
    return "ok" if isinstance(e, ValueError) and str(e) == "from the handler" else f"exception {e!r}"


def cancelled_while_waiting(loop):
    caught = []

    async def handler():
        try:
            await loop.create_future()
        except asyncio.CancelledError:
            caught.append(True)
            raise

    task = start(loop, handler())
    task.cancel()

    async def check():
        try:
            await task
        except asyncio.CancelledError:
            pass
        if not (task.cancelled() and caught == [True]):
            raise AssertionError(f"cancelled={task.cancelled()} caught={caught}")

    global pending
    pending = loop.create_task(check())
    return "ok"


def check_later_it_was_current(loop, task):
    """For a Task that returns asyncio.current_task(): checks, once it is
    done, that it ran as that Task."""
    async def check():
        if await task is not task:
            raise AssertionError("current_task() was not the Task")

    global pending
    pending = loop.create_task(check())
    return "ok"


class NoAttributesLoop(asyncio.SelectorEventLoop):
    """A loop whose instance takes no attribute (as uvloop's)."""

    def __setattr__(self, name, value):
        if name == "call_soon":
            raise AttributeError(name)
        super().__setattr__(name, value)


def loop_without_attributes(loop):
    async def handler():
        return asyncio.current_task()

    task = start(loop, handler())
    eager = sys.version_info >= (3, 12)  # eager_start needs no shadowing
    if task.done() != eager:
        return f"done={task.done()} on Python {sys.version_info[:2]}"

    return check_later_it_was_current(loop, task)


class FactoryTask(asyncio.Task):
    pass


def loop_with_a_task_factory(loop):
    loop.set_task_factory(lambda loop, coro, **kwargs: FactoryTask(coro, loop=loop, **kwargs))

    async def handler():
        return asyncio.current_task()

    task = start(loop, handler())
    if type(task) is not FactoryTask:
        return f"a {type(task).__name__}, not the factory's FactoryTask"
    if task.done():
        return "done at once: the factory's Task starts on the next iteration"

    return check_later_it_was_current(loop, task)


def run(name):
    global pending
    pending = None
    loop = NoAttributesLoop() if name == "loop_without_attributes" else None

    def case(loop):
        return globals()[name](loop)

    result = on_loop(case, loop)
    if result == "ok" and pending is not None and pending.exception() is not None:
        return f"later: {pending.exception()!r}"
    return result
)PY";

PyObject* start_binding(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "start(loop, coro)");
        return nullptr;
    }
    return py::start_task_eagerly(args[0], args[1]);
}

PyMethodDef start_def = {"start", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(start_binding)),
                         METH_FASTCALL, "python::start_task_eagerly"};

struct interpreter {
    interpreter() {
        py::start(py::interpreter_settings{});
        py::gil_scope gil;
        globals = PyDict_New();
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
        py::py_ref fn(PyCFunction_New(&start_def, nullptr));
        PyDict_SetItemString(globals, "start", fn.get());
        py::py_ref r(PyRun_String(cases, Py_file_input, globals, globals));
        if (!r) py::log_exception("eager_task_test: cannot define the cases");
    }
    static inline PyObject* globals = nullptr;
};

std::string run_case(const char* name) {
    py::gil_scope gil;
    py::py_ref result(PyObject_CallFunction(PyDict_GetItemString(interpreter::globals, "run"), "s", name));
    if (!result) return "error: " + py::take_exception_text();
    const char* text = PyUnicode_AsUTF8(result.get());
    return text ? text : "not a str";
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(interpreter);

BOOST_AUTO_TEST_CASE(a_coroutine_that_answers_at_once_is_done_when_start_returns_and_ran_in_its_task) {
    BOOST_TEST(run_case("answers_at_once") == "ok");
}

BOOST_AUTO_TEST_CASE(a_coroutine_that_waits_is_woken_by_the_loop_as_a_task) {
    BOOST_TEST(run_case("waits_then_finishes") == "ok");
}

BOOST_AUTO_TEST_CASE(the_first_step_runs_in_a_copy_of_the_callers_context) {
    BOOST_TEST(run_case("own_context") == "ok");
}

BOOST_AUTO_TEST_CASE(an_exception_of_the_first_step_is_kept_by_the_task) {
    BOOST_TEST(run_case("exception_is_the_tasks") == "ok");
}

BOOST_AUTO_TEST_CASE(a_task_waiting_after_its_first_step_is_cancelled_as_any_task) {
    BOOST_TEST(run_case("cancelled_while_waiting") == "ok");
}

BOOST_AUTO_TEST_CASE(a_loop_that_takes_no_attribute_gets_a_task_that_starts_on_its_next_iteration) {
    BOOST_TEST(run_case("loop_without_attributes") == "ok");
}

BOOST_AUTO_TEST_CASE(a_loop_with_a_task_factory_gets_the_factorys_task) {
    BOOST_TEST(run_case("loop_with_a_task_factory") == "ok");
}
