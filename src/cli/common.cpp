#include <unistd.h>

#include <iostream>

#include "cli/command.h"
#include "util/text_escape.h"

namespace launchguard::cli {

int bad_input(const std::string& message) {
    // Messages quote paths and values from the input: keep them one line and
    // free of terminal escapes.
    std::cerr << "launchguard: " << printable_text(message) << "\n";
    return kExitBadInput;
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr; }

}  // namespace launchguard::cli
