#include "growth_rule.hpp"

#include <algorithm>
#include <cmath>

namespace m0::pool {

unsigned threads_to_add(const growth_sample& s) noexcept {
    if (!s.sustained || s.queued == 0 || s.live >= s.max || !(s.demand < saturated_demand)) return 0;
    std::uint64_t n = std::min<std::uint64_t>(s.queued, s.max - s.live);
    const double per_thread = s.busy > 0 ? std::max(0.0, s.demand) / s.busy : 0;
    if (per_thread > 0) {
        const double room = std::floor((saturated_demand - s.demand) / per_thread);
        if (room < static_cast<double>(n)) n = static_cast<std::uint64_t>(std::max(room, 0.0));
    }
    return static_cast<unsigned>(std::max<std::uint64_t>(n, 1));
}

}  // namespace m0::pool
