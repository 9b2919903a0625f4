// m0._m0: the hosted entry point. The wheel's `m0` command and `python -m m0`
// start in the user's Python and hand the process to m0's command line here;
// m0 then finds the interpreter running (libs/python-embed, hosted) instead
// of starting one. This module links libm0core and the command line, never
// libpython: CPython's symbols come from the process that imports it.
#include <Python.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "main/cli.hpp"

namespace {

bool string_list(PyObject* list, const char* what, std::vector<std::string>& out) {
    if (!PyList_Check(list)) {
        PyErr_Format(PyExc_TypeError, "m0._m0.run(): %s must be a list of str", what);
        return false;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
        PyObject* item = PyList_GET_ITEM(list, i);  // borrowed
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "m0._m0.run(): %s must be a list of str", what);
            return false;
        }
        // The file system encoding, as sys.argv was decoded with it.
        PyObject* bytes = PyUnicode_EncodeFSDefault(item);
        if (!bytes) return false;
        out.emplace_back(PyBytes_AS_STRING(bytes), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
    }
    return true;
}

void flush_python_stream(const char* name) {
    PyObject* stream = PySys_GetObject(name);  // borrowed
    if (!stream || stream == Py_None) return;
    PyObject* r = PyObject_CallMethod(stream, "flush", nullptr);
    if (r) Py_DECREF(r);
    else PyErr_Clear();
}

// run(argv, command_prefix, python_mode, python_executable): never returns.
// m0 owns the process from here, as the `m0` binary does: the GIL is
// released while it serves, and the process exits with m0's exit code
// without finalizing the interpreter (worker processes forked by the
// supervisor end here too), so the application's atexit handlers do not run,
// exactly as under the binary that embeds CPython.
PyObject* run(PyObject*, PyObject* args) {
    PyObject* argv_list = nullptr;
    PyObject* prefix_list = nullptr;
    const char* mode = nullptr;
    const char* executable = nullptr;
    if (!PyArg_ParseTuple(args, "O!O!ss:run", &PyList_Type, &argv_list, &PyList_Type, &prefix_list, &mode,
                          &executable))
        return nullptr;
    std::vector<std::string> argv_text;
    m0::cli_host host;
    if (!string_list(argv_list, "argv", argv_text) || !string_list(prefix_list, "command_prefix", host.command_prefix))
        return nullptr;
    if (argv_text.empty()) argv_text.emplace_back("m0");
    host.python_mode = mode;
    host.python_executable = executable;
    host.extra_commands = {"sdk"};
    host.help_extra =
        "Installed as a wheel: m0 runs hosted in this Python (its venv is the app's venv); `m0 sdk --help`\n"
        "tells where the SDK for out-of-tree plugins is.\n";
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    flush_python_stream("stdout");
    flush_python_stream("stderr");
    // Python's SIGINT handler only sets a flag that nothing reads while m0
    // runs: until m0 takes its signals, SIGINT ends the process, as it does
    // the binary's.
    ::signal(SIGINT, SIG_DFL);

    int code = 0;
    Py_BEGIN_ALLOW_THREADS
    code = m0::run_cli(static_cast<int>(argv_text.size()), argv.data(), host);
    Py_END_ALLOW_THREADS

    // What the application printed through Python's own (buffered) streams.
    flush_python_stream("stdout");
    flush_python_stream("stderr");
    PyEval_SaveThread();
    std::fflush(nullptr);
    std::exit(code);
}

PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(argv, command_prefix, python_mode, python_executable)\n--\n\n"
     "Runs m0's command line hosted in this interpreter; exits the process with its exit code."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "m0._m0", "m0's core, hosted in this Python.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__m0() { return PyModule_Create(&module_def); }
