// Included first in every C++ file of m0 (CMakeLists.txt, -include).
//
// GCC 12's libstdc++ exports std::condition_variable::wait(unique_lock&)
// twice: the GLIBCXX_3.4.11 version every libstdc++ since GCC 4.5 has, and a
// GLIBCXX_3.4.30 one (GCC 12: the same wait, declared noexcept(false) so that
// a pthread cancellation can unwind through it). Code compiled against GCC 12's
// headers binds the newer one, which alone would make m0's libraries need GCC
// 12's runtime: no RHEL 9 (GCC 11's libstdc++, glibc 2.34), and a wheel tagged
// manylinux_2_35 instead of 2_34. m0 never cancels a thread, so the older
// version is the same function for it; this binds every reference to it.
// tests/python/test_wheel.py asserts the resulting tag, so a new GCC 12 symbol
// shows up there.
#if defined(__cplusplus) && defined(__linux__) && defined(__x86_64__)
__asm__(".symver _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE,"
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
#endif
