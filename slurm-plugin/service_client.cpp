#include "service_client.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace launchguard::slurm {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool set_timeouts(int fd, long timeout_s) {
    const timeval timeout{timeout_s, 0};
    return ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout) == 0 &&
           ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0;
}

class ClosedAtEnd {
public:
    explicit ClosedAtEnd(int fd) : fd_(fd) {}
    ClosedAtEnd(const ClosedAtEnd&) = delete;
    ClosedAtEnd& operator=(const ClosedAtEnd&) = delete;
    ~ClosedAtEnd() { ::close(fd_); }

private:
    int fd_;
};

}  // namespace

int connect_task_service(const std::string& socket_path, long timeout_s, std::string& why) noexcept {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof address.sun_path) {
        why = "the socket path is longer than a Unix socket's address";
        return -1;
    }
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        why = errno_text("socket");
        return -1;
    }
    // A Unix socket's connect waits on a full backlog as long as SO_SNDTIMEO says.
    if (!set_timeouts(fd, timeout_s) ||
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        why = errno_text(("connect " + socket_path).c_str());
        ::close(fd);
        return -1;
    }
    return fd;
}

bool send_message(int fd, std::string_view bytes) noexcept {
    std::size_t sent = 0;
    while (sent < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) errno = EPIPE;
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

ReceivedMessage receive_message(int fd, std::size_t max_bytes, std::span<char> scratch) {
    ReceivedMessage received;
    MessageEnd end;
    for (;;) {
        const ssize_t n = ::recv(fd, scratch.data(), scratch.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            received.error = errno;
            return received;
        }
        if (n == 0) return received;
        received.bytes.append(scratch.data(), static_cast<std::size_t>(n));
        if (received.bytes.size() > max_bytes) {
            received.too_large = true;
            return received;
        }
        if (end.reached(received.bytes)) return received;
    }
}

Result<TaskAnswer> ask_task_service(int fd, const std::string& bytes) {
    const ClosedAtEnd closed(fd);
    if (!send_message(fd, bytes)) return make_error(errno_text("sending the request"));
    // The service reads to the request's "end" record; the closed sending
    // side is for a service of an earlier release, which read to the close.
    if (::shutdown(fd, SHUT_WR) != 0) return make_error(errno_text("shutdown"));
    // An answer is a few lines: one page at a time.
    char scratch[4096];
    ReceivedMessage answer = receive_message(fd, kMaxTaskAnswerBytes, scratch);
    // A connection reset before any answer is a close without one.
    if (answer.error == ECONNRESET && answer.bytes.empty()) answer.error = 0;
    if (answer.error != 0) {
        errno = answer.error;
        return make_error(errno == EAGAIN || errno == EWOULDBLOCK ? std::string("no answer within the timeout")
                                                                  : errno_text("reading the answer"));
    }
    if (answer.too_large) return make_error("the answer is larger than a task reads");
    if (answer.bytes.empty()) return make_error("the service closed the connection without an answer");
    return decode_task_answer(answer.bytes);
}

}  // namespace launchguard::slurm
