#pragma once
// What `executor.asyncio` configures.
#include <cstddef>
#include <string>

namespace m0::asyncio {

enum class loop_kind { asyncio, uvloop };

struct asyncio_options {
    unsigned loops = 1;               // loop threads; lane i is served by loop i % loops
    loop_kind loop = loop_kind::asyncio;
    std::size_t ring_capacity = 1024; // per lane and direction; a power of two
};

}  // namespace m0::asyncio
