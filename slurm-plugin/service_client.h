// The task's side of launchguard-task-service (task_service_protocol.h):
// plain POSIX sockets, no Slurm, no library beyond the C++ runtime, because
// the small plugin that srun loads carries it. Every call is bounded by a
// timeout and reports failure as text; none throws for a socket error.
// The sending and receiving of a message are the service's too.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "task_service_protocol.h"
#include "util/error.h"

namespace launchguard::slurm {

// A connected socket to the service, or -1 with `why` set. `timeout_s`
// bounds the connect and every later send and receive (0: no bound).
int connect_task_service(const std::string& socket_path, long timeout_s, std::string& why) noexcept;

// Sends all of `bytes` on the connected socket `fd`; false, with errno set,
// when the connection fails or a send outlasts the socket's timeout.
bool send_message(int fd, std::string_view bytes) noexcept;

// One message read from a connected socket, up to its "end" record
// (MessageEnd) or the other side's close, whichever comes first.
struct ReceivedMessage {
    std::string bytes;       // what arrived
    int error = 0;           // errno of the receive that failed (EAGAIN: the timeout); 0: none
    bool too_large = false;  // more than the caller's bound arrived; reading stopped there
};
// Each receive goes into `scratch` and what arrived is appended: the task's
// side keeps it to a page on its stack, since each page it touches costs a
// fresh fork a fault, and the service's threads keep theirs warm. (Growing
// the message by a zero-filled chunk before each receive cleared 64 KiB per
// request in the service: docs/performance.md, thirteenth round.)
ReceivedMessage receive_message(int fd, std::size_t max_bytes, std::span<char> scratch);

// Sends the encoded request (TaskRequestWriter) on `fd`, closes the sending
// side, reads the answer to its "end" record (not to the close), and closes
// `fd` (in every case).
Result<TaskAnswer> ask_task_service(int fd, const std::string& request);

}  // namespace launchguard::slurm
