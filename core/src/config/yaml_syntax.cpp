#include "config/yaml_syntax.hpp"

#include <optional>
#include <vector>

namespace m0::config_detail {

namespace {

struct position {
    int line = 0;    // 0-based
    int column = 0;  // 0-based
    char what = 0;   // the bracket or quote
};

std::string at(const std::string& file, int line, int column) {
    if (line < 0) return file;
    return file + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
}

// The first line, up to `last_line`, indented with a tab.
std::optional<position> tab_in_indentation(const std::string& text, int last_line) {
    int line = 0;
    std::size_t start = 0;
    while (start <= text.size() && line <= last_line) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        for (std::size_t i = start; i < end && (text[i] == ' ' || text[i] == '\t'); ++i)
            if (text[i] == '\t') return position{line, static_cast<int>(i - start), '\t'};
        start = end + 1;
        ++line;
    }
    return std::nullopt;
}

// The bracket or quote left open at the end of `text`. A bracket or quote
// opens something only where a value begins (after "key: ", "- ", at the
// start of a line, or inside brackets); elsewhere it is part of a plain
// word ("a[1]", "it's").
std::optional<position> unclosed(const std::string& text) {
    std::vector<position> open;
    std::optional<position> quote;
    bool value_start = true;  // the next non-space character may begin a value
    int line = 0, column = 0;
    for (std::size_t i = 0; i < text.size(); ++i, ++column) {
        const char c = text[i];
        if (c == '\n') {
            ++line;
            column = -1;
            if (!quote && open.empty()) value_start = true;
            continue;
        }
        if (quote) {
            if (quote->what == '"' && c == '\\') {
                ++i, ++column;
            } else if (c == quote->what) {
                if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
                    ++i, ++column;
                } else {
                    quote.reset();
                    value_start = false;
                }
            }
            continue;
        }
        if (c == ' ' || c == '\t') continue;
        if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
            while (i + 1 < text.size() && text[i + 1] != '\n') ++i, ++column;
            continue;
        }
        if (value_start && (c == '"' || c == '\'')) {
            quote = position{line, column, c};
            continue;
        }
        if (value_start && (c == '[' || c == '{')) {
            open.push_back({line, column, c});
            continue;
        }
        if (!open.empty() && (c == ']' || c == '}')) {
            open.pop_back();
            value_start = false;
            continue;
        }
        // After an indicator followed by a space, or a comma in brackets, a value may begin.
        const bool next_blank = i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\n';
        value_start = ((c == ':' || c == '-') && next_blank) || (c == ',' && !open.empty());
    }
    if (quote) return quote;
    if (!open.empty()) return open.back();
    return std::nullopt;
}

bool has(const std::string& message, const char* what) { return message.find(what) != std::string::npos; }

}  // namespace

std::string explain_yaml_error(const std::string& text, const std::string& file, const std::string& message,
                               int line, int column) {
    const std::string where = at(file, line, column);
    if (const auto tab = tab_in_indentation(text, line < 0 ? 1 << 30 : line))
        return at(file, tab->line, tab->column) +
               ": YAML syntax: a tab in the indentation; YAML indents with spaces only (replace the tab with spaces)";
    if (has(message, "flow not found") || has(message, "EOF in scalar") || has(message, "end of map not found") ||
        has(message, "end of sequence not found")) {
        if (const auto open = unclosed(text)) {
            const std::string opened = at(file, open->line, open->column);
            if (open->what == '[')
                return opened + ": YAML syntax: this '[' is never closed (a list written [a, b] needs its ']')";
            if (open->what == '{')
                return opened + ": YAML syntax: this '{' is never closed (a map written {a: 1} needs its '}')";
            return opened + ": YAML syntax: this " + (open->what == '"' ? "double" : "single") +
                   " quote is never closed";
        }
    }
    if (has(message, "illegal flow end"))
        return where + ": YAML syntax: a ']' or '}' that closes nothing (remove it, or quote the value)";
    if (has(message, "illegal map value"))
        return where + ": YAML syntax: a ':' where no key can start; a value holding ': ' must be quoted "
                       "(\"a: b\"), and a key must start a line of its own";
    if (has(message, "end of map not found") || has(message, "end of sequence not found"))
        return where + ": YAML syntax: this line's indentation does not match the lines above it (" + message + ")";
    return where + ": YAML syntax: " + message;
}

}  // namespace m0::config_detail
