#pragma once
// The built-in `m0` module applications import inside m0's interpreter:
// `m0.publish(channel, data, *, event=None)` (stubs: libs/python-embed/stubs).
#include <m0/python/api.hpp>

namespace m0::realtime {
class hub;
}

namespace m0::python {

// Makes `import m0` work (adds it to sys.modules). `hub` is the realtime
// service, null when the deployment has no `realtime:` section; publish()
// then raises RuntimeError. Returns false with a Python exception set.
// GIL held; a second call only updates the hub.
M0PY_API bool install_m0_module(realtime::hub* hub);

}  // namespace m0::python
