"""Configuration of an m0 serving the test-only `reflect` frontend, which CMake
builds into a plugin directory of its own (see CMakeLists.txt)."""
import os

import m0test

REFLECT_PLUGIN_DIR = os.path.join(m0test.BUILD_DIR, "test-plugins-conformance")


def reflect_config(http=None, http2=None):
    """YAML text: the reflect frontend, with `http:` keys from the dict `http`
    and `http2:` keys from the dict `http2`."""
    lines = ["plugins:", f"  path: [{REFLECT_PLUGIN_DIR!r}]", "frontend:", "  type: reflect"]
    for section, keys in (("http", http), ("http2", http2)):
        if keys:
            lines.append(f"{section}:")
            lines += [f"  {k}: {v}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"
