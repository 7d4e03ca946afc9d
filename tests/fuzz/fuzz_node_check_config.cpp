// /etc/launchguard/node-check.conf (node/node_check_config.h): written by an
// operator, read by every node's health check. Besides not crashing, every
// error must say where: the file, and a line within the text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "node/node_check_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const std::string origin = "/etc/launchguard/node-check.conf";
    auto config = launchguard::parse_node_check_config(text, origin);
    if (!config) {
        const auto& e = config.error();
        std::size_t lines = 1;
        for (char c : text) lines += c == '\n' ? 1 : 0;
        if (e.file != origin || e.line < 1 || static_cast<std::size_t>(e.line) > lines || e.message.empty()) {
            __builtin_trap();
        }
    }
    return 0;
}
