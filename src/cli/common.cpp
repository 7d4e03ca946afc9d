#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <iostream>
#include <limits>

#include "cli/command.h"
#include "engine/engine.h"
#include "util/text_escape.h"

namespace launchguard::cli {

int exit_code_for(Decision decision) {
    switch (decision) {
        case Decision::block:
            return kExitBlock;
        case Decision::patch:
            return kExitPatch;
        case Decision::allow:
            return kExitAllow;
    }
    return kExitAllow;
}

int bad_input(const std::string& message) {
    // Messages quote paths and values from the input: keep them one line and
    // free of terminal escapes.
    std::cerr << "launchguard: " << printable_text(message) << "\n";
    return kExitBadInput;
}

CLI::Validator count_in_range(int min) {
    return CLI::Validator(
        [min](std::string& text) -> std::string {
            long long value = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc::invalid_argument || end != text.data() + text.size()) {
                return "expected a whole number, got '" + printable_text(text) + "'";
            }
            if (ec == std::errc::result_out_of_range || value < min || value > std::numeric_limits<int>::max()) {
                return "'" + text + "' is out of range: expected " + std::to_string(min) + " to " +
                       std::to_string(std::numeric_limits<int>::max());
            }
            return {};
        },
        "INT>=" + std::to_string(min));
}

int finish_output(int exit_code) {
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "launchguard: cannot write the output (" << std::strerror(errno) << ")\n";
        return kExitBadInput;
    }
    return exit_code;
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr; }

}  // namespace launchguard::cli
