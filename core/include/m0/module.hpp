#pragma once
// Module seam: a plugin that is neither a frontend nor an executor (the
// realtime hold path, a metrics exporter). It is loaded when the deployment
// has a top-level section named after it, gets the same per-process and
// per-reactor hooks as a frontend (m0/serving.hpp), and offers what it does
// to the frontends as services (m0/services.hpp), which they find by name
// and version.
#include <m0/serving.hpp>

namespace m0 {

class module : public serving_hooks {};

}  // namespace m0
