#pragma once
// Symbol visibility for the SDK. libm0core and every plugin build with
// -fvisibility=hidden; only what is marked M0_API is exported from libm0core.
#define M0_API __attribute__((visibility("default")))
