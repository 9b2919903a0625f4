#pragma once
#include <boost/version.hpp>

// m0's own version. The build signature below is compiled into libm0core and
// into every plugin from this same header, so a plugin built by another
// compiler, standard library ABI, Boost or m0 is refused at load time rather
// than crashing on a mismatched class layout.
#define M0_VERSION_MAJOR 0
#define M0_VERSION_MINOR 3
#define M0_VERSION_PATCH 0
#define M0_VERSION_STRING "0.3.0"

#define M0_STRINGIFY_IMPL(x) #x
#define M0_STRINGIFY(x) M0_STRINGIFY_IMPL(x)

#if defined(__clang__)
#define M0_COMPILER_ID "clang-" __clang_version__
#elif defined(__GNUC__)
#define M0_COMPILER_ID "gcc-" __VERSION__
#else
#define M0_COMPILER_ID "unknown-compiler"
#endif

#if defined(_GLIBCXX_USE_CXX11_ABI)
#define M0_STDLIB_ABI "libstdc++-cxx11abi-" M0_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#else
#define M0_STDLIB_ABI "stdlib-unknown"
#endif

#define M0_BUILD_SIGNATURE \
    M0_COMPILER_ID ";" M0_STDLIB_ABI ";boost-" BOOST_LIB_VERSION ";m0-" M0_VERSION_STRING
