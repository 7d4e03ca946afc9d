// Whether launchguard-task-service is running, asked without a connection.
//
// A running service holds a write lock (fcntl F_SETLK) on a file beside its
// socket, "SOCKET.lock", from just before it listens until it exits; the
// kernel drops the lock when the process ends, however it ends. A step's
// `init` asks whether the lock is held (F_GETLK, which takes nothing), where
// it used to connect and close: that connection cost the service an accept,
// a read and a wake-up for every step (docs/performance.md, fourteenth
// round). Plain POSIX, no Slurm: the small plugin carries it.
#pragma once

#include <string>

namespace launchguard::slurm {

// "SOCKET.lock".
std::string task_service_lock_path(const std::string& socket_path);

enum class ServiceLiveness {
    up,       // a process holds the lock
    down,     // the lock file is there and nobody holds it: the service stopped
    unknown,  // no lock file (a service of an earlier release): ask by connecting
};

// `why` says what was found when the answer is down or unknown.
ServiceLiveness task_service_liveness(const std::string& socket_path, std::string& why) noexcept;

// For the service: creates the lock file (0600) and takes its lock for the
// life of the process; returns its descriptor, to be kept open (closing any
// descriptor of the file would drop the lock), or -1 with `why` set, as when
// another process holds it: another service on the same socket.
int hold_task_service_lock(const std::string& socket_path, std::string& why) noexcept;

}  // namespace launchguard::slurm
