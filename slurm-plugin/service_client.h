// The task's side of launchguard-task-service (task_service_protocol.h):
// plain POSIX sockets, no Slurm, no library beyond the C++ runtime, because
// the small plugin that srun loads carries it. Every call is bounded by a
// timeout and reports failure as text; none throws for a socket error.
#pragma once

#include <string>

#include "task_service_protocol.h"
#include "util/error.h"

namespace launchguard::slurm {

// A connected socket to the service, or -1 with `why` set. `timeout_s`
// bounds the connect and every later send and receive (0: no bound).
int connect_task_service(const std::string& socket_path, long timeout_s, std::string& why) noexcept;

// Sends the encoded request (TaskRequestWriter) on `fd`, closes the sending
// side, reads the answer to its "end" record (not to the close), and closes
// `fd` (in every case).
Result<TaskAnswer> ask_task_service(int fd, const std::string& request);

}  // namespace launchguard::slurm
