#include "main/cli_environment.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string_view>

#include <boost/program_options/value_semantic.hpp>

#include <m0/config.hpp>

extern char** environ;

namespace m0 {
namespace {

namespace po = boost::program_options;

constexpr std::string_view prefix = "M0_";

// Variables m0 reads for other purposes (and those it sets for itself
// across a reload), never flags: silent whatever they look like.
const std::vector<std::string> other_variables = {
    "M0_POOL_RING", "M0_PLUGIN_PATH", "M0_REUSEPORT_WORKERS", "M0_PREVIOUS_WORKERS", "M0_RELOAD_SOCKETS",
    "M0_PROBED_INTERFACE",
};

std::string lower(std::string_view s) {
    std::string out;
    for (char c : s) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool is_switch(const po::option_description& o) { return o.semantic()->max_tokens() == 0; }

bool is_repeatable(const po::option_description& o) {
    return dynamic_cast<const po::typed_value<std::vector<std::string>>*>(o.semantic().get()) != nullptr;
}

std::vector<std::string> split(const std::string& value, bool on_semicolons) {
    std::vector<std::string> out;
    std::string item;
    for (char c : value) {
        if (c == '\n' || (on_semicolons && c == ';')) {
            if (!item.empty()) out.push_back(item);
            item.clear();
        } else if (c != '\r') {
            item += c;
        }
    }
    if (!item.empty()) out.push_back(item);
    return out;
}

// true: given, false: left out; throws for anything else.
bool switch_value(const std::string& variable, const std::string& value) {
    const std::string v = lower(value);
    if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
    if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
    throw std::invalid_argument(variable + "=" + value + ": expected 1, true, yes or on (or 0, false, no, off)");
}

}  // namespace

std::string environment_name(const std::string& flag) {
    std::string out(prefix);
    for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::vector<std::string> environment_arguments(const po::options_description& flags,
                                               const std::vector<std::string>& skipped,
                                               std::vector<std::string>& warnings) {
    std::vector<std::string> names;
    for (const auto& o : flags.options()) names.push_back(o->long_name());
    std::vector<std::string> out;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view entry(*e);
        if (entry.substr(0, prefix.size()) != prefix) continue;
        const auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        const std::string variable(entry.substr(0, eq));
        const std::string value(entry.substr(eq + 1));
        const std::string flag = lower(entry.substr(prefix.size(), eq - prefix.size()));
        if (std::find(other_variables.begin(), other_variables.end(), variable) != other_variables.end()) continue;
        if (std::find(skipped.begin(), skipped.end(), flag) != skipped.end()) {
            warnings.push_back(variable + " is ignored: --" + flag + " is only read from the command line");
            continue;
        }
        const po::option_description* o = flags.find_nothrow(flag, false);
        if (!o) {
            if (auto near = nearest_key(flag, names))
                warnings.push_back(variable + " is not an m0 variable and is ignored (did you mean " +
                                   environment_name(*near) + ", for --" + *near + "?)");
            continue;
        }
        if (is_switch(*o)) {
            if (switch_value(variable, value)) out.push_back("--" + flag);
        } else if (is_repeatable(*o)) {
            for (const auto& item : split(value, flag != "set")) out.push_back("--" + flag + "=" + item);
        } else if (o->semantic()->min_tokens() == 0) {
            // A flag with an optional value (--access-log[=FILE]): a switch's
            // "yes" gives it without one.
            const std::string v = lower(value);
            if (v == "1" || v == "true" || v == "yes" || v == "on") out.push_back("--" + flag);
            else if (!value.empty() && v != "0" && v != "false" && v != "no" && v != "off")
                out.push_back("--" + flag + "=" + value);
        } else {
            out.push_back("--" + flag + "=" + value);
        }
    }
    return out;
}

}  // namespace m0
