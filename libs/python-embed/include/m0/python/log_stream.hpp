#pragma once
// A file-like object writing to m0's log (wsgi.errors and the like). GIL held.
#include <Python.h>

#include <m0/log.hpp>
#include <m0/python/api.hpp>

namespace m0::python {

// New reference to a stream with write/writelines/flush; each line written
// becomes one log line at `level`. Text is buffered until a newline or flush.
M0PY_API PyObject* new_log_stream(m0::log::level level);

}  // namespace m0::python
