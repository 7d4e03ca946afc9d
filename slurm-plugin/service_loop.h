// How launchguard-task-service waits for its tasks: one thread at a time, the
// leader, waits in epoll for the listening socket and every connection that
// has not sent its whole request yet, and answers each request on its own
// thread as soon as it is whole.
//
// Why not a thread per connection, blocked in accept() and then in recv():
// each of those returns is a wake-up of an idle thread, and a task cost the
// service three of them (its connect in task_init_privileged, its request in
// task_init, and, for a step's later tasks, the check lock the earlier one
// held), each some 100 µs of CPU on a VM where a switch into the service is
// expensive (docs/performance.md, fifteenth round). The leader wakes for a
// step's connections and again for its requests, and answers the requests
// that arrived while it was answering another without sleeping in between.
//
// An answer that takes long (a check stuck on a hung mount in the task's
// root) must not hold the others: the leader arms a timer before each
// answer, and when it fires a watchdog thread hands the lead to an idle
// thread, which goes on with the other connections. The stuck thread goes
// idle once its answer returns. Without an idle thread left, the next one
// whose answer returns leads again; until then, connections wait in the
// listen backlog and each task goes on after its own timeout.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "task_service_protocol.h"

namespace launchguard::slurm {

struct ServiceLoopSettings {
    // Threads that may answer at the same time: one leads, the others take
    // over from one whose answer is stuck.
    int threads = 8;
    // How long a connection may take to send its whole request.
    std::chrono::milliseconds request_timeout{30000};
    // An answer that takes longer hands the lead to another thread. A check
    // takes under a millisecond; one that takes this long waits on a file.
    std::chrono::milliseconds takeover_after{200};
    std::size_t max_request_bytes = kMaxTaskRequestBytes;
    // The only user whose connections are read (the plugin connects as root
    // in task_init_privileged); others are refused and logged. None: any.
    std::optional<uid_t> only_uid = 0;
};

class ServiceLoop {
public:
    // Writes the answer to `request`, sent by the process `peer`, on `fd`
    // (blocking, with the request timeout as its send timeout); the loop
    // closes `fd` afterwards. An empty request is a connection closed
    // without one. Returns a line for the service's log, if any. Must not
    // throw.
    using Answer = std::function<std::optional<std::string>(int fd, const ucred& peer, const std::string& request)>;
    using Log = std::function<void(const std::string&)>;

    // Starts the threads on `listener`, a listening socket (made
    // non-blocking here), which stays the caller's. Null, with `why`, when
    // the kernel objects the loop needs cannot be made.
    static std::unique_ptr<ServiceLoop> start(int listener, Answer answer, Log log, ServiceLoopSettings settings,
                                              std::string& why);
    ServiceLoop(const ServiceLoop&) = delete;
    ServiceLoop& operator=(const ServiceLoop&) = delete;
    // Stops and joins the threads; waits for answers in progress.
    ~ServiceLoop();

private:
    struct Pending {
        ucred peer{};
        std::string bytes;
        MessageEnd end;
        std::chrono::steady_clock::time_point deadline;
    };
    struct WholeRequest {
        int fd = -1;
        Pending pending;
    };
    // The two ends of a request: whole, or the connection is to be closed.
    enum class Received { incomplete, whole, closed };

    ServiceLoop(int listener, Answer answer, Log log, ServiceLoopSettings settings);
    void run_worker(int index);
    void watch_answers();
    // Waits for connections and requests while this thread leads; returns
    // when it no longer does (its answer was stuck) or the loop stops.
    void lead(int index);
    void accept_connections();
    Received receive(int fd, Pending& pending, std::span<char> scratch);
    // False when this thread was relieved of the lead during the answer.
    bool answer_as_leader(int index, const WholeRequest& request);
    void close_expired();
    int wait_ms() const;

    int listener_;
    Answer answer_;
    Log log_;
    ServiceLoopSettings settings_;
    int epoll_fd_ = -1;
    int timer_fd_ = -1;  // armed while the leader answers
    int stop_fd_ = -1;   // an eventfd, readable once the loop stops

    // The connections waiting for their requests, by descriptor, and the
    // requests that are whole, to answer in the order they came: only the
    // leader touches them.
    std::map<int, Pending> pending_;
    std::deque<WholeRequest> whole_;

    std::mutex mutex_;
    std::condition_variable lead_free_;
    bool stopping_ = false;
    int leader_ = -1;  // the index of the thread that leads; -1: none
    // While the leader answers: since when, and whom.
    bool answering_ = false;
    std::chrono::steady_clock::time_point answering_since_;
    pid_t answering_pid_ = 0;

    std::vector<std::thread> workers_;
    std::thread watchdog_;
};

}  // namespace launchguard::slurm
