#pragma once
// Symbol visibility for the SDK. libm0core and every plugin build with
// -fvisibility=hidden; only what is marked M0_API is exported from libm0core.
#define M0_API __attribute__((visibility("default")))

// Core internals the m0 executable and the core's own tests call into. Exported
// from libm0core but declared only in private headers under core/src: not part
// of the SDK, no stability promise.
#define M0_INTERNAL_API __attribute__((visibility("default")))
