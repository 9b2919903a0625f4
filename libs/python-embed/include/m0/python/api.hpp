#pragma once
// Symbol visibility for libm0python (built with -fvisibility=hidden like
// everything else; only what is marked M0PY_API is exported).
#define M0PY_API __attribute__((visibility("default")))
