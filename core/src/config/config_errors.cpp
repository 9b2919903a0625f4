// config_error and config_errors: the errors of a configuration, one or
// many, and their collection in YAML order so that one run reports them all.
#include <m0/config.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

namespace m0 {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
    return out;
}

// "m0.yaml:12:5: ..." -> (12, 5). A --set names its assignment instead,
// which may itself hold "a:1:2" (an address): it has no position.
std::optional<std::pair<long, long>> position_of(std::string_view error) {
    if (error.rfind("--set ", 0) == 0) return std::nullopt;
    const auto digits = [&](std::size_t& i) {
        const std::size_t start = i;
        long n = 0;
        while (i < error.size() && std::isdigit(static_cast<unsigned char>(error[i])) && i - start < 9)
            n = n * 10 + (error[i++] - '0');
        return i > start ? std::optional<long>(n) : std::nullopt;
    };
    for (std::size_t colon = error.find(':'); colon != std::string_view::npos; colon = error.find(':', colon + 1)) {
        std::size_t i = colon + 1;
        const auto line = digits(i);
        if (!line || i >= error.size() || error[i] != ':') continue;
        ++i;
        const auto column = digits(i);
        if (column && i < error.size() && error[i] == ':') return std::pair(*line, *column);
    }
    return std::nullopt;
}

}  // namespace

config_error::config_error(const std::string& error)
    : std::runtime_error(error), errors_(std::make_shared<const std::vector<std::string>>(1, error)) {}
config_error::config_error(const char* error) : config_error(std::string(error)) {}
config_error::config_error(std::vector<std::string> errors)
    : std::runtime_error(join_lines(errors)),
      errors_(std::make_shared<const std::vector<std::string>>(std::move(errors))) {}

const std::vector<std::string>& config_error::errors() const noexcept { return *errors_; }

void config_errors::add(const config_error& error) {
    for (const auto& e : error.errors())
        if (std::find(errors_.begin(), errors_.end(), e) == errors_.end()) errors_.push_back(e);
}

bool config_errors::empty() const noexcept { return errors_.empty(); }
std::size_t config_errors::size() const noexcept { return errors_.size(); }

void config_errors::throw_if_any() const {
    if (errors_.empty()) return;
    auto sorted = errors_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
        const auto pa = position_of(a);
        const auto pb = position_of(b);
        if (!pa || !pb) return pa.has_value() && !pb.has_value();
        return *pa < *pb;
    });
    throw config_error(std::move(sorted));
}

}  // namespace m0
