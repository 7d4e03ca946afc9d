#include <unistd.h>

#include <iostream>

#include "cli/command.h"

namespace launchguard::cli {

int bad_input(const std::string& message) {
    std::cerr << "launchguard: " << message << "\n";
    return kExitBadInput;
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr; }

}  // namespace launchguard::cli
