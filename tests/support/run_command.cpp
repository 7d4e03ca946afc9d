#include "support/run_command.h"
#include "support/text.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace launchguard::testing {

std::string quote_arg(const std::string& arg) {
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

CommandResult run_command(const std::string& command_line) {
    char out_path[] = "/tmp/lg-test-out-XXXXXX";
    char err_path[] = "/tmp/lg-test-err-XXXXXX";
    int out_fd = ::mkstemp(out_path);
    int err_fd = ::mkstemp(err_path);
    ::close(out_fd);
    ::close(err_fd);
    std::string full = command_line + " >" + out_path + " 2>" + err_path + " </dev/null";
    int status = std::system(full.c_str());
    CommandResult result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = read_all(out_path);
    result.err = read_all(err_path);
    ::unlink(out_path);
    ::unlink(err_path);
    return result;
}

}  // namespace launchguard::testing
