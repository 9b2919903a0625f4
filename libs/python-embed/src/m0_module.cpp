#include <m0/python/m0_module.hpp>

#include <Python.h>

#include <atomic>
#include <optional>
#include <string_view>

#include <m0/realtime.hpp>

namespace m0::python {
namespace {

std::atomic<realtime::hub*> the_hub{nullptr};

// str (as UTF-8) or bytes; false with TypeError set otherwise.
bool text_or_bytes(PyObject* o, const char* what, std::string_view& out) {
    if (PyBytes_Check(o)) {
        out = std::string_view(PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
        return true;
    }
    if (PyUnicode_Check(o)) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(o, &n);
        if (!s) return false;
        out = std::string_view(s, static_cast<std::size_t>(n));
        return true;
    }
    PyErr_Format(PyExc_TypeError, "m0.publish(): %s must be str or bytes, not %.100s", what, Py_TYPE(o)->tp_name);
    return false;
}

PyObject* publish(PyObject*, PyObject* args, PyObject* kwargs) {
    static const char* const keywords[] = {"channel", "data", "event", nullptr};
    PyObject* channel = nullptr;
    PyObject* data = nullptr;
    PyObject* event = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "UO|$O:publish", const_cast<char**>(keywords), &channel, &data,
                                     &event))
        return nullptr;
    realtime::hub* hub = the_hub.load(std::memory_order_acquire);
    if (!hub) {
        PyErr_SetString(PyExc_RuntimeError, "m0.publish() needs the realtime module: add a `realtime:` section");
        return nullptr;
    }
    Py_ssize_t channel_size = 0;
    const char* channel_text = PyUnicode_AsUTF8AndSize(channel, &channel_size);
    if (!channel_text) return nullptr;
    std::string_view payload;
    if (!text_or_bytes(data, "data", payload)) return nullptr;
    std::optional<std::string_view> event_name;
    if (event != Py_None) {
        if (!PyUnicode_Check(event)) {
            PyErr_Format(PyExc_TypeError, "m0.publish(): event must be str or None, not %.100s",
                         Py_TYPE(event)->tp_name);
            return nullptr;
        }
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(event, &n);
        if (!s) return nullptr;
        event_name = std::string_view(s, static_cast<std::size_t>(n));
        // One line: a newline would end the field and inject others.
        if (event_name->find_first_of("\r\n") != std::string_view::npos) {
            PyErr_SetString(PyExc_ValueError, "m0.publish(): event must not contain CR or LF");
            return nullptr;
        }
    }
    // Never waits for a client: the hub only queues work for the reactors.
    // str goes to a WebSocket as a text frame, bytes as a binary one.
    hub->publish(std::string_view(channel_text, static_cast<std::size_t>(channel_size)), payload, event_name,
                 PyBytes_Check(data) ? realtime::payload_kind::binary : realtime::payload_kind::text);
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"publish", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(publish)),
     METH_VARARGS | METH_KEYWORDS,
     "publish(channel, data, *, event=None)\n--\n\n"
     "Sends data (str or bytes) to every connection held on channel; any thread, never blocks."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "m0", "m0's runtime: publish to held connections.", -1, methods,
                          nullptr, nullptr, nullptr, nullptr};

}  // namespace

bool install_m0_module(realtime::hub* hub) {
    the_hub.store(hub, std::memory_order_release);
    PyObject* modules = PyImport_GetModuleDict();
    if (PyObject* existing = PyDict_GetItemString(modules, "m0")) {  // borrowed
        // Hosted: `m0` is the wheel's package, which runs m0; it gains
        // publish() (once), so that applications import the same module.
        if (!PyModule_Check(existing) || PyObject_HasAttrString(existing, "publish")) return true;
        return PyModule_AddFunctions(existing, methods) == 0;
    }
    PyObject* m = PyModule_Create(&module_def);
    if (!m) return false;
    int rc = PyDict_SetItemString(modules, "m0", m);
    Py_DECREF(m);
    return rc == 0;
}

}  // namespace m0::python
