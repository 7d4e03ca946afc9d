#include "util/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

extern char** environ;

namespace launchguard {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds d) {
    const auto ms = d.count();
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
    char text[32];
    std::snprintf(text, sizeof(text), "%.3g s", static_cast<double>(ms) / 1000.0);
    return text;
}

class Pipe {
public:
    Pipe() {
        if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
    }
    ~Pipe() {
        close_read();
        close_write();
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    [[nodiscard]] bool ok() const { return fds_[0] >= 0; }
    [[nodiscard]] int read_end() const { return fds_[0]; }
    [[nodiscard]] int write_end() const { return fds_[1]; }
    void close_read() { close_fd(fds_[0]); }
    void close_write() { close_fd(fds_[1]); }

private:
    static void close_fd(int& fd) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    int fds_[2] = {-1, -1};
};

// Reads fd until EOF or the deadline; false when the deadline came first.
bool read_until_eof(int fd, Clock::time_point deadline, const std::function<void(std::string_view)>& chunk) {
    char buffer[8192];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        struct pollfd p {
            fd, POLLIN, 0
        };
        int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
        if (ready < 0) {
            if (errno == EINTR) continue;
            return true;  // nothing more can be read; the exit status tells the rest
        }
        if (ready == 0) continue;  // the loop re-checks the deadline
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return true;
        }
        if (n == 0) return true;
        chunk(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
}

// The child's exit status once it has closed its end; -1 if it has not
// exited within a short grace (it closed the pipe but lingers).
std::optional<int> reap(pid_t child, Clock::time_point until) {
    int status = 0;
    for (;;) {
        pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done == child) return status;
        if (done < 0 && errno != EINTR) return std::nullopt;
        if (Clock::now() >= until) return std::nullopt;
        ::usleep(1000);
    }
}

// Kills a child that missed its deadline. A process blocked uninterruptibly
// dies only when its system call returns: reap briefly, never block on it.
void abandon(pid_t child) {
    ::kill(child, SIGKILL);
    (void)reap(child, Clock::now() + std::chrono::milliseconds(200));
}

void write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Records between child and parent: one type byte ('N' a step note, 'R' the
// result), a 4-byte length, the bytes.
void write_record(int fd, char type, std::string_view data) {
    char header[5];
    header[0] = type;
    const auto size = static_cast<std::uint32_t>(data.size());
    std::memcpy(header + 1, &size, sizeof(size));
    write_all(fd, std::string_view(header, sizeof(header)));
    write_all(fd, data);
}

struct Records {
    std::string buffer;
    std::string last_note;
    std::optional<std::string> result;

    void feed(std::string_view chunk) {
        buffer.append(chunk);
        for (;;) {
            if (buffer.size() < 5) return;
            std::uint32_t size = 0;
            std::memcpy(&size, buffer.data() + 1, sizeof(size));
            if (buffer.size() < 5 + static_cast<std::size_t>(size)) return;
            std::string data = buffer.substr(5, size);
            if (buffer[0] == 'R')
                result = std::move(data);
            else
                last_note = std::move(data);
            buffer.erase(0, 5 + static_cast<std::size_t>(size));
        }
    }
};

std::string describe_status(int status) {
    if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

bool forked_child_may_run_library_code() noexcept { return __libc_single_threaded != 0; }

void restore_default_crash_signals() {
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM}) std::signal(sig, SIG_DFL);
}

Result<std::string> run_forked_with_deadline(const ChildBody& body, std::chrono::milliseconds deadline) {
    // The body is library code (a node check, the gate's judgement): a child
    // of a multi-threaded process could block for good on a lock that another
    // thread held at the fork, and the deadline would report a stall that is
    // not the node's. Refused rather than risked.
    if (!forked_child_may_run_library_code()) {
        return make_error(
            "cannot run in a forked child: this process has started threads, and a child of a "
            "multi-threaded process may only call async-signal-safe functions (internal error)");
    }
    const auto until = Clock::now() + deadline;
    Pipe channel;
    if (!channel.ok()) return make_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    std::fflush(nullptr);  // the child leaves with _exit; keep buffers from being written twice
    pid_t child = ::fork();
    if (child < 0) return make_error(std::string("cannot fork: ") + std::strerror(errno));
    if (child == 0) {
        restore_default_crash_signals();
        channel.close_read();
        const int fd = channel.write_end();
        const StepNote note = [fd](std::string_view step) { write_record(fd, 'N', step); };
        std::string result;
        try {
            result = body(note);
        } catch (...) {
            ::_exit(70);
        }
        write_record(fd, 'R', result);
        ::_exit(0);
    }
    channel.close_write();
    Records records;
    const bool in_time = read_until_eof(channel.read_end(), until, [&](std::string_view c) { records.feed(c); });
    const std::string step = records.last_note.empty() ? std::string() : " while " + records.last_note;
    if (!in_time) {
        abandon(child);
        return make_error("did not finish within " + seconds_text(deadline) + step +
                          " (stopped; a read that never "
                          "returns, such as a hung device's sysfs attribute, stalls it)");
    }
    auto status = reap(child, std::max(until, Clock::now() + std::chrono::milliseconds(200)));
    if (!status) {
        abandon(child);
        return make_error("did not exit after its result" + step);
    }
    if (records.result && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return std::move(*records.result);
    return make_error(describe_status(*status) + step + " without a result");
}

Result<ProgramResult> run_program(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                                  std::chrono::milliseconds deadline) {
    if (argv.empty() || argv.front().empty() || argv.front().front() != '/') {
        return make_error("run_program needs an absolute path, got '" + (argv.empty() ? std::string() : argv.front()) +
                          "'");
    }
    const auto until = Clock::now() + deadline;
    // Built before fork: the child of a multithreaded parent may only call
    // async-signal-safe functions, and allocation is not one.
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.push_back(*e);
    for (const auto& e : extra_env) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);

    Pipe output;
    if (!output.ok()) return make_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    Pipe exec_error;  // close-on-exec: EOF with no bytes means execve succeeded
    if (!exec_error.ok()) return make_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    std::fflush(nullptr);
    pid_t child = ::fork();
    if (child < 0) return make_error(std::string("cannot fork: ") + std::strerror(errno));
    if (child == 0) {
        int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
        ::dup2(output.write_end(), STDOUT_FILENO);
        ::dup2(output.write_end(), STDERR_FILENO);
        // An ignored signal stays ignored across execve: the launchguard CLI
        // ignores SIGPIPE (cli/main.cpp), the program it runs must not.
        ::signal(SIGPIPE, SIG_DFL);
        ::execve(args[0], args.data(), env.data());
        const int error = errno;
        (void)!::write(exec_error.write_end(), &error, sizeof(error));
        ::_exit(127);
    }
    output.close_write();
    exec_error.close_write();
    int exec_errno = 0;
    if (::read(exec_error.read_end(), &exec_errno, sizeof(exec_errno)) == static_cast<ssize_t>(sizeof(exec_errno))) {
        (void)reap(child, Clock::now() + std::chrono::seconds(1));
        return make_error("cannot run " + argv.front() + ": " + std::strerror(exec_errno));
    }
    ProgramResult result;
    const bool in_time = read_until_eof(output.read_end(), until, [&](std::string_view chunk) {
        const std::size_t room = kMaxProgramOutputBytes - result.output.size();
        result.output.append(chunk.substr(0, room));
    });
    if (!in_time) {
        abandon(child);
        return make_error(argv.front() + " did not finish within " + seconds_text(deadline) + " (killed)");
    }
    auto status = reap(child, std::max(until, Clock::now() + std::chrono::milliseconds(200)));
    if (!status) {
        abandon(child);
        return make_error(argv.front() + " closed its output but did not exit within " + seconds_text(deadline) +
                          " (killed)");
    }
    result.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    return result;
}

}  // namespace launchguard
