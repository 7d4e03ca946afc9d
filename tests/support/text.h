// Text helpers of the tests: deriving a variant of a recorded file, and asking
// what a message mentions.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace launchguard::testing {

// `text` with every `from` replaced by `to`, left to right: how a test derives
// a file from a real one and names exactly what it changed.
inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// Whether `text` (a message, a reason, a script) contains `part`.
inline bool mentions(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// The whole file, byte for byte; empty when it cannot be read.
inline std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace launchguard::testing
