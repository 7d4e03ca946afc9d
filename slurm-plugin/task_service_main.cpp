// launchguard-task-service [--socket PATH]: answers the task checks of the
// Slurm plugin's service=PATH (task_service.h) on a Unix socket, as root.
//
// Only root may ask: the plugin connects in task_init_privileged, before
// slurmstepd drops to the job's user, and the kernel's SO_PEERCRED of the
// connection says who connected. The socket is 0600 besides.
//
// One thread at a time waits for the connections and the requests, and
// answers each request as it is whole (service_loop.h): each wake-up of an
// idle thread costs the service CPU time, and one thread per connection woke
// three times per task. The threads live as long as the service, because
// what is worth keeping warm includes their stacks and the heap: a check in
// a new thread took 1.0 to 1.2 ms where one in a thread that had checked
// before took 0.35 ms, on a VM that charges 18 µs per page fault
// (docs/performance.md).
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

#include <CLI/CLI.hpp>

#include "service_liveness.h"
#include "service_loop.h"
#include "task_service.h"

namespace {

using launchguard::slurm::TaskService;

void say(const std::string& line) { std::fprintf(stderr, "launchguard-task-service: %s\n", line.c_str()); }

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
    auto answer = [](int fd, const ucred& peer, const std::string& request) {
        return service.answer_request(fd, peer.pid, request);
    };
    const auto loop = launchguard::slurm::ServiceLoop::start(listener, answer, say, {}, why);
    if (!loop) {
        say(why);
        return 1;
    }
    for (;;) ::pause();
}
