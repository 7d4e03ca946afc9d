#include "service_liveness.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace launchguard::slurm {
namespace {

// The whole file, as the lock covers it.
struct flock whole_file(short type) {
    struct flock lock {};
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    return lock;
}

}  // namespace

std::string task_service_lock_path(const std::string& socket_path) { return socket_path + ".lock"; }

ServiceLiveness task_service_liveness(const std::string& socket_path, std::string& why) noexcept {
    try {
        const std::string path = task_service_lock_path(socket_path);
        // O_NOFOLLOW: the directory is root's, and so is the file the service made.
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            why = path + ": " + std::strerror(errno);
            return ServiceLiveness::unknown;
        }
        // Would a read lock conflict? Only with the service's write lock. F_GETLK
        // takes nothing, so it cannot stand in the way of a service starting.
        struct flock lock = whole_file(F_RDLCK);
        const int asked = ::fcntl(fd, F_GETLK, &lock);
        const int error = errno;
        ::close(fd);
        if (asked != 0) {
            why = path + ": F_GETLK: " + std::strerror(error);
            return ServiceLiveness::unknown;
        }
        if (lock.l_type != F_UNLCK) return ServiceLiveness::up;
        why = "no process holds " + path + " (the service is not running)";
        return ServiceLiveness::down;
    } catch (...) {
        why = "out of memory";
        return ServiceLiveness::unknown;
    }
}

int hold_task_service_lock(const std::string& socket_path, std::string& why) noexcept {
    try {
        const std::string path = task_service_lock_path(socket_path);
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            why = path + ": " + std::strerror(errno);
            return -1;
        }
        struct flock lock = whole_file(F_WRLCK);
        if (::fcntl(fd, F_SETLK, &lock) != 0) {
            const int error = errno;
            struct flock holder = whole_file(F_WRLCK);
            const bool known = ::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK;
            ::close(fd);
            why = error == EACCES || error == EAGAIN
                      ? path + " is held by " +
                            (known ? "process " + std::to_string(holder.l_pid) : "another process") +
                            ": another launchguard-task-service runs on this socket"
                      : path + ": " + std::strerror(error);
            return -1;
        }
        // The holder's pid in the file, for an operator who looks.
        const std::string pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
            // The lock is what counts; the pid is a courtesy.
        }
        return fd;
    } catch (...) {
        why = "out of memory";
        return -1;
    }
}

}  // namespace launchguard::slurm
