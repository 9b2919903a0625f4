// "module:callable" / "module:factory()" resolution with one-line failure
// reasons and the full traceback in the log.
#include <m0/python/app_import.hpp>

#include <stdexcept>
#include <string>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>
#include <m0/python/interpreter.hpp>

namespace m0::python {

namespace {

[[noreturn]] void fail_with_traceback(std::string_view spec, std::string_view what) {
    std::string text = take_exception_text();
    std::string reason = "cannot load application '" + std::string(spec) + "': " + std::string(what);
    if (!text.empty()) {
        log::error(reason + ":\n" + text);
        reason += ": " + last_line(text);
    }
    throw std::runtime_error(reason);
}

// The interpreter, its environment and sys.path, and how to choose another
// environment. GIL held, no exception set (one raised here is cleared).
std::string where_python_looked() {
    std::string out;
    py_ref sys(PyImport_ImportModule("sys"));
    auto text = [&](const char* attr, bool repr = false) -> std::string {
        py_ref v(sys ? PyObject_GetAttrString(sys.get(), attr) : nullptr);
        py_ref str(v ? (repr ? PyObject_Repr(v.get()) : PyObject_Str(v.get())) : nullptr);
        const char* utf8 = str ? PyUnicode_AsUTF8(str.get()) : nullptr;
        if (!utf8) PyErr_Clear();
        return utf8 ? utf8 : "?";
    };
    const std::string prefix = text("prefix"), base = text("base_prefix");
    const std::string version = text("version");
    out = "Python " + version.substr(0, version.find(' ')) + " from " + base;
    out += prefix == base ? ", no virtual environment" : ", virtual environment " + prefix;
    out += "; sys.path: " + text("path", true);
    // Hosted, the interpreter is the one that runs m0: no setting changes it.
    out += hosted() ? "; m0 runs hosted in this Python: install the package into this environment, or install "
                      "m0 into the package's one and run that m0"
                    : "; if the package is installed in a virtual environment, name it with python.venv (--venv) or "
                      "VIRTUAL_ENV";
    PyErr_Clear();
    return out;
}

// Evaluates the literal argument list of "factory(a, b)" safely.
py_ref literal_args(std::string_view spec, std::string_view args) {
    if (args.find_first_not_of(" \t") == std::string_view::npos) return py_ref(PyTuple_New(0));
    py_ref ast(PyImport_ImportModule("ast"));
    if (!ast) fail_with_traceback(spec, "cannot import ast");
    // Appended, not `"(" + std::string(args) + ",)"`, on which GCC 12 warns
    // (-Wrestrict, a false positive of its string inlining).
    std::string src;
    src.reserve(args.size() + 3);
    src += '(';
    src += args;
    src += ",)";
    py_ref tuple(PyObject_CallMethod(ast.get(), "literal_eval", "s", src.c_str()));
    if (!tuple || !PyTuple_Check(tuple.get()))
        fail_with_traceback(spec, "factory arguments must be Python literals");
    return tuple;
}

}  // namespace

py_ref import_callable(std::string_view spec) {
    std::string_view module = spec, attr = "application";
    if (auto colon = spec.find(':'); colon != std::string_view::npos) {
        module = spec.substr(0, colon);
        attr = spec.substr(colon + 1);
    }
    if (module.empty() || attr.empty())
        throw std::runtime_error("application '" + std::string(spec) +
                                 "' must look like 'package.module:callable'");
    std::string_view call_args;
    bool is_call = false;
    if (auto paren = attr.find('('); paren != std::string_view::npos) {
        if (attr.back() != ')')
            throw std::runtime_error("application '" + std::string(spec) +
                                     "': a factory call must end with ')'");
        call_args = attr.substr(paren + 1, attr.size() - paren - 2);
        attr = attr.substr(0, paren);
        is_call = true;
    }

    py_ref obj(PyImport_ImportModule(std::string(module).c_str()));
    if (!obj) {
        std::string why = "import of module '" + std::string(module) + "' failed";
        // "No module named 'django'" alone does not say where Python looked.
        if (PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            why += " (" + where_python_looked() + ")";
            PyErr_Restore(type, value, tb);
        }
        fail_with_traceback(spec, why);
    }

    std::string_view rest = attr;
    while (!rest.empty()) {
        auto dot = rest.find('.');
        std::string name(rest.substr(0, dot));
        py_ref next(PyObject_GetAttrString(obj.get(), name.c_str()));
        if (!next) {
            PyErr_Clear();
            throw std::runtime_error("cannot load application '" + std::string(spec) + "': module '" +
                                     std::string(module) + "' has no attribute '" + std::string(attr) + "'");
        }
        obj = std::move(next);
        rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot + 1);
    }

    if (is_call) {
        if (!PyCallable_Check(obj.get()))
            throw std::runtime_error("cannot load application '" + std::string(spec) + "': '" +
                                     std::string(attr) + "' is not callable");
        py_ref args = literal_args(spec, call_args);
        py_ref made(PyObject_Call(obj.get(), args.get(), nullptr));
        if (!made) fail_with_traceback(spec, "factory '" + std::string(attr) + "()' raised");
        obj = std::move(made);
    }
    if (!PyCallable_Check(obj.get())) {
        // type.__name__, not PyType_GetName: that is 3.11+, and the wheels start at 3.10.
        py_ref type_name(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj.get())), "__name__"));
        if (!type_name) PyErr_Clear();
        const char* tn = type_name ? PyUnicode_AsUTF8(type_name.get()) : "?";
        throw std::runtime_error("cannot load application '" + std::string(spec) + "': '" +
                                 std::string(attr) + (is_call ? "()" : "") +
                                 "' is not callable (it is a " + (tn ? tn : "?") + ")");
    }
    return obj;
}

}  // namespace m0::python
