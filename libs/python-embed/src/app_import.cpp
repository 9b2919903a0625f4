// "module:callable" / "module:factory()" resolution with one-line failure
// reasons and the full traceback in the log.
#include <m0/python/app_import.hpp>

#include <stdexcept>
#include <string>

#include <m0/log.hpp>
#include <m0/python/errors.hpp>

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

// Evaluates the literal argument list of "factory(a, b)" safely.
py_ref literal_args(std::string_view spec, std::string_view args) {
    if (args.find_first_not_of(" \t") == std::string_view::npos) return py_ref(PyTuple_New(0));
    py_ref ast(PyImport_ImportModule("ast"));
    if (!ast) fail_with_traceback(spec, "cannot import ast");
    std::string src = "(" + std::string(args) + ",)";
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
    if (!obj) fail_with_traceback(spec, "import of module '" + std::string(module) + "' failed");

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
        py_ref type_name(PyType_GetName(Py_TYPE(obj.get())));
        const char* tn = type_name ? PyUnicode_AsUTF8(type_name.get()) : "?";
        throw std::runtime_error("cannot load application '" + std::string(spec) + "': '" +
                                 std::string(attr) + (is_call ? "()" : "") +
                                 "' is not callable (it is a " + (tn ? tn : "?") + ")");
    }
    return obj;
}

}  // namespace m0::python
