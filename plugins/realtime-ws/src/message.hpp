#pragma once
// One published message, formatted once and shared by every hold that
// receives it (no copy per connection).
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace m0::realtime {

struct message {
    std::shared_ptr<const std::string> data;  // as published: a long-poll body
    std::shared_ptr<const std::string> sse;   // the same as one SSE event
};

// `event:` when given, one `data:` line per line of `data` (split on LF, a
// CR before it dropped), then the blank line that ends the event.
std::string format_sse_event(std::string_view data, std::optional<std::string_view> event);

std::shared_ptr<const message> make_message(std::string_view data, std::optional<std::string_view> event);

}  // namespace m0::realtime
