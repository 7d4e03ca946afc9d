// launchguard-task-service [--socket PATH]: answers the task checks of the
// Slurm plugin's service=PATH (task_service.h) on a Unix socket, as root.
//
// Only root may ask: the plugin connects in task_init_privileged, before
// slurmstepd drops to the job's user, and the kernel's SO_PEERCRED of the
// connection says who connected. The socket is 0600 besides.
//
// A fixed set of threads wait in accept() and answer one connection each at
// a time, start to end: the task's file access ids are per thread, and a
// connection that sends nothing holds only its thread, until its timeout.
// The threads live as long as the service, because what is worth keeping
// warm includes their stacks and the heap: a check in a new thread took
// 1.0 to 1.2 ms where one in a thread that had checked before took 0.35 ms,
// on a VM that charges 18 µs per page fault (docs/performance.md).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <malloc.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "service_liveness.h"
#include "task_service.h"

namespace {

using launchguard::slurm::TaskService;

// Connections answered at once; more wait in the listen backlog, and a task
// that waits longer than node-read-timeout= goes on as on-error says.
constexpr int kWorkers = 8;

void say(const std::string& line) { std::fprintf(stderr, "launchguard-task-service: %s\n", line.c_str()); }

void serve_connection(TaskService& service, int fd) noexcept {
    try {
        ucred peer{};
        socklen_t size = sizeof peer;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
            say(std::string("SO_PEERCRED: ") + std::strerror(errno));
        } else if (peer.uid != 0) {
            say("refused process " + std::to_string(peer.pid) + " of uid " + std::to_string(peer.uid) +
                ": only root may ask (the plugin connects in task_init_privileged)");
        } else {
            if (auto problem = service.answer_connection(fd, peer.pid)) say(*problem);
        }
    } catch (...) {
        say("a connection failed (out of memory?)");
    }
    ::close(fd);
}

[[noreturn]] void accept_connections(TaskService& service, int listener) {
    for (;;) {
        const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
            serve_connection(service, fd);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        say(std::string("accept: ") + std::strerror(errno));
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) ::sleep(1);
    }
}

int listen_on(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof address.sun_path) {
        say("--socket: " + path + ": not a usable socket path");
        return -1;
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    // A socket left by an earlier run is replaced; anything else is not.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            say("--socket: " + path + " exists and is not a socket");
            return -1;
        }
        ::unlink(path.c_str());
    }
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const mode_t old_mask = ::umask(0177);  // 0600 from the start, no window
    const bool bound = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::umask(old_mask);
    if (!bound || ::listen(fd, SOMAXCONN) != 0) {
        say("--socket: " + path + ": " + std::strerror(errno));
        if (fd >= 0) ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"launchguard-task-service: the Slurm plugin's task checks, answered from outside the tasks"};
    std::string socket_path = "/run/launchguard/task.sock";
    app.add_option("--socket", socket_path, "Unix socket to listen on (the plugin's service=)")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    // One heap, never given back: the pages the checks used stay mapped for
    // the next task instead of faulting in again (each thread would have an
    // arena of its own, and glibc returns freed memory above 128 KiB).
    ::mallopt(M_ARENA_MAX, 1);
    ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
    if (::geteuid() != 0) say("not running as root: tasks of other users cannot be checked");
    std::signal(SIGPIPE, SIG_IGN);

    // The lock beside the socket says to each step that the service runs
    // (service_liveness.h); taken before the socket is replaced, so that a
    // second service on the same socket stops here, and held until exit.
    std::string why;
    if (launchguard::slurm::hold_task_service_lock(socket_path, why) < 0) {
        say("--socket: " + why);
        return 1;
    }
    const int listener = listen_on(socket_path);
    if (listener < 0) return 1;
    say("listening on " + socket_path);
    static TaskService service;
    std::vector<std::thread> workers;
    for (int i = 1; i < kWorkers; ++i) workers.emplace_back(accept_connections, std::ref(service), listener);
    accept_connections(service, listener);
}
