#include <m0/python/eager_task.hpp>

#include <utility>

#include <m0/python/errors.hpp>
#include <m0/python/ref.hpp>

namespace m0::python {

namespace {

// asyncio.Task, for Python 3.12+: made with eager_start=True. Looked up once
// and kept for the life of the process (never released: the interpreter may
// be finalised before static destructors run).
PyObject* task_class() {
    static PyObject* task = [] {
        py_ref asyncio(PyImport_ImportModule("asyncio"));
        return asyncio ? PyObject_GetAttrString(asyncio.get(), "Task") : nullptr;
    }();
    return task;
}

// The Task as the loop makes it, first step on its next iteration.
PyObject* create_task(PyObject* loop, PyObject* coro) {
    static PyObject* const name = PyUnicode_InternFromString("create_task");
    return PyObject_CallMethodOneArg(loop, name, coro);
}

#if PY_VERSION_HEX >= 0x030C0000

PyObject* eager_start_keywords() {
    static PyObject* names = Py_BuildValue("(ss)", "loop", "eager_start");
    return names;
}

#else

// Python 3.10 and 3.11: the step a new Task hands to `loop.call_soon`,
// taken while the Task is made (one thread at a time: the GIL is held from
// arming to disarming, and a loop belongs to one thread).
struct step_capture {
    bool armed = false;
    PyObject* forward = nullptr;   // the loop's own call_soon, for every other call
    PyObject* callback = nullptr;  // the step (strong)
    PyObject* context = nullptr;   // the Task's context (strong)
};

thread_local step_capture capture;

// Shadows `loop.call_soon` while a Task is made. The Task's own call is
// `call_soon(step, context=ctx)` (the C Task and asyncio's Python Task
// alike); anything else (a finaliser run by the collector meanwhile, say)
// goes to the loop.
PyObject* capturing_call_soon(PyObject*, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (capture.armed && nargs == 1 && kwnames && PyTuple_GET_SIZE(kwnames) == 1 &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "context") == 0 &&
        PyContext_CheckExact(args[1])) {
        capture.armed = false;
        capture.callback = Py_NewRef(args[0]);
        capture.context = Py_NewRef(args[1]);
        Py_RETURN_NONE;  // the Task keeps no handle of its step
    }
    return PyObject_Vectorcall(capture.forward, args, nargsf, kwnames);
}

PyMethodDef capturing_def = {"call_soon", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(capturing_call_soon)),
                             METH_FASTCALL | METH_KEYWORDS, "m0: takes a new Task's first step to run it at once"};

PyObject* capturing_function() {
    static PyObject* fn = PyCFunction_NewEx(&capturing_def, nullptr, nullptr);
    return fn;
}

PyObject* call_soon_name() {
    static PyObject* name = PyUnicode_InternFromString("call_soon");
    return name;
}

// Whether `loop` lets its call_soon be shadowed: its instance takes
// attributes, and nothing shadows the class's method already. Asked once
// per loop (a loop thread runs one loop for its whole life).
bool can_capture(PyObject* loop, PyObject* bound) {
    thread_local PyObject* seen_loop = nullptr;
    thread_local PyTypeObject* seen_type = nullptr;
    thread_local bool seen_answer = false;
    if (loop == seen_loop && Py_TYPE(loop) == seen_type) return seen_answer;
    bool answer = false;
    PyObject* own = _PyType_Lookup(Py_TYPE(loop), call_soon_name());  // borrowed
    if (own && PyMethod_Check(bound) && PyMethod_GET_SELF(bound) == loop && PyMethod_GET_FUNCTION(bound) == own) {
        if (PyObject_SetAttr(loop, call_soon_name(), capturing_function()) == 0) {
            answer = PyObject_DelAttr(loop, call_soon_name()) == 0;
        }
        PyErr_Clear();  // no instance attributes (uvloop's Loop): a plain Task
    }
    seen_loop = loop;
    seen_type = Py_TYPE(loop);
    seen_answer = answer;
    return answer;
}

// Runs a captured step as the loop would (Handle._run: the callback in the
// Task's context). The step catches what the coroutine raises; an error out
// of the step itself is the loop's to report, as it would be there.
void run_step(PyObject* callback, PyObject* context) {
    if (PyContext_Enter(context) == 0) {
        py_ref r(PyObject_CallNoArgs(callback));
        PyContext_Exit(context);
        if (r) return;
    }
    log_exception("asyncio: the first step of a Task failed");
}

PyObject* start_with_capture(PyObject* loop, PyObject* coro) {
    py_ref bound(PyObject_GetAttr(loop, call_soon_name()));
    if (!bound) return nullptr;
    if (!can_capture(loop, bound.get())) return create_task(loop, coro);
    if (PyObject_SetAttr(loop, call_soon_name(), capturing_function()) != 0) return nullptr;
    capture.armed = true;
    capture.forward = bound.get();
    PyObject* args[] = {coro, loop};
    static PyObject* const loop_keyword = Py_BuildValue("(s)", "loop");
    py_ref task(PyObject_Vectorcall(task_class(), args, 1, loop_keyword));
    capture.armed = false;
    capture.forward = nullptr;
    py_ref callback(std::exchange(capture.callback, nullptr));
    py_ref context(std::exchange(capture.context, nullptr));
    // Restored before anything else runs, whatever happened.
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (PyObject_DelAttr(loop, call_soon_name()) != 0) PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    if (!task) return nullptr;
    // Not taken (a Task class that schedules otherwise): it was scheduled
    // through the loop, and runs on its next iteration as usual.
    if (callback && context) run_step(callback.get(), context.get());
    return task.release();
}

#endif

}  // namespace

PyObject* start_task_eagerly(PyObject* loop, PyObject* coro) {
    if (!task_class()) return nullptr;
    // A task factory set on the loop (loop.set_task_factory: an app's own
    // Task class, a tracing library, asyncio.eager_task_factory) makes every
    // Task that loop.create_task() makes; bypassing it would hand the app a
    // Task of another class. With one, the factory's Task is the request's,
    // started as the factory starts it. Asked each time: the app may set it
    // at any moment (in its lifespan startup, say).
    static PyObject* const get_task_factory = PyUnicode_InternFromString("get_task_factory");
    py_ref factory(PyObject_CallMethodNoArgs(loop, get_task_factory));
    if (!factory || factory.get() != Py_None) {
        PyErr_Clear();  // a loop that cannot say: create_task() knows its own
        return create_task(loop, coro);
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyObject* args[] = {coro, loop, Py_True};
    return PyObject_Vectorcall(task_class(), args, 1, eager_start_keywords());
#else
    return start_with_capture(loop, coro);
#endif
}

}  // namespace m0::python
