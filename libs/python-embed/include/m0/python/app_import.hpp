#pragma once
// Importing the application object a config names. GIL held.
#include <string_view>

#include <m0/python/api.hpp>
#include <m0/python/ref.hpp>

namespace m0::python {

// `spec` is "package.module:attr.path", "module:factory()" or
// "module:factory('literal', args)"; "module" alone means
// "module:application". The result must be callable. On failure the Python
// traceback is logged and std::runtime_error is thrown with a one-line reason
// ("cannot import 'x:app': ModuleNotFoundError: No module named 'x'").
M0PY_API py_ref import_callable(std::string_view spec);

}  // namespace m0::python
