// Formatting the pending Python exception for m0's log.
#include <m0/python/errors.hpp>

#include <Python.h>

#include <m0/log.hpp>
#include <m0/python/ref.hpp>

namespace m0::python {

namespace {

std::string to_std(PyObject* s) {
    Py_ssize_t n = 0;
    const char* p = s ? PyUnicode_AsUTF8AndSize(s, &n) : nullptr;
    if (!p) {
        PyErr_Clear();
        return "<unprintable>";
    }
    return std::string(p, static_cast<std::size_t>(n));
}

}  // namespace

std::string take_exception_text() {
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    PyErr_Fetch(&type, &value, &tb);
    if (!type) return {};
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, tb);
    py_ref t(type), v(value), b(tb);
    std::string out;
    py_ref mod(PyImport_ImportModule("traceback"));
    py_ref lines;
    if (mod) {
        py_ref fn(PyObject_GetAttrString(mod.get(), "format_exception"));
        if (fn)
            lines = py_ref(PyObject_CallFunctionObjArgs(fn.get(), t.get(), v ? v.get() : Py_None,
                                                        b ? b.get() : Py_None, nullptr));
    }
    if (lines && PyList_Check(lines.get())) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines.get()); ++i)
            out += to_std(PyList_GET_ITEM(lines.get(), i));
    } else {
        PyErr_Clear();
        py_ref s(PyObject_Str(v ? v.get() : t.get()));
        out = to_std(s.get());
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

std::string last_line(std::string_view text) {
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    auto nl = text.rfind('\n');
    return std::string(nl == std::string_view::npos ? text : text.substr(nl + 1));
}

void log_exception(std::string_view what) {
    std::string text = take_exception_text();
    std::string msg(what);
    if (!text.empty()) msg += ":\n" + text;
    log::error(msg);
}

}  // namespace m0::python
