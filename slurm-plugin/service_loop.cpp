#include "service_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace launchguard::slurm {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string task_name(const ucred& peer) { return "task " + std::to_string(peer.pid); }

// A duration as the log says it: whole seconds when it is some, else milliseconds.
std::string duration_text(milliseconds duration) {
    if (duration.count() % 1000 == 0) return std::to_string(duration.count() / 1000) + " s";
    return std::to_string(duration.count()) + " ms";
}

// Events the leader waits for at once; more are taken on its next round.
constexpr int kEventsPerWait = 16;

}  // namespace

std::unique_ptr<ServiceLoop> ServiceLoop::start(int listener, Answer answer, Log log, ServiceLoopSettings settings,
                                                std::string& why) {
    std::unique_ptr<ServiceLoop> loop(new ServiceLoop(listener, std::move(answer), std::move(log), settings));
    loop->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    loop->timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    loop->stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop->epoll_fd_ < 0 || loop->timer_fd_ < 0 || loop->stop_fd_ < 0) {
        why = errno_text("epoll, timerfd or eventfd");
        return nullptr;
    }
    const int flags = ::fcntl(listener, F_GETFL);
    if (flags < 0 || ::fcntl(listener, F_SETFL, flags | O_NONBLOCK) != 0) {
        why = errno_text("making the listening socket non-blocking");
        return nullptr;
    }
    for (const int fd : {listener, loop->stop_fd_}) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = fd;
        if (::epoll_ctl(loop->epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
            why = errno_text("epoll_ctl");
            return nullptr;
        }
    }
    const int threads = std::max(1, settings.threads);
    for (int i = 0; i < threads; ++i) loop->workers_.emplace_back(&ServiceLoop::run_worker, loop.get(), i);
    loop->watchdog_ = std::thread(&ServiceLoop::watch_answers, loop.get());
    return loop;
}

ServiceLoop::ServiceLoop(int listener, Answer answer, Log log, ServiceLoopSettings settings)
    : listener_(listener), answer_(std::move(answer)), log_(std::move(log)), settings_(settings) {}

ServiceLoop::~ServiceLoop() {
    {
        const std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    lead_free_.notify_all();
    if (stop_fd_ >= 0) {
        const std::uint64_t one = 1;
        // An eventfd's counter cannot overflow from one write: it succeeds.
        [[maybe_unused]] const ssize_t written = ::write(stop_fd_, &one, sizeof one);
    }
    for (auto& worker : workers_) worker.join();
    if (watchdog_.joinable()) watchdog_.join();
    for (const auto& [fd, pending] : pending_) ::close(fd);
    for (const WholeRequest& request : whole_) ::close(request.fd);
    for (const int fd : {epoll_fd_, timer_fd_, stop_fd_}) {
        if (fd >= 0) ::close(fd);
    }
}

void ServiceLoop::run_worker(int index) {
    std::unique_lock lock(mutex_);
    for (;;) {
        lead_free_.wait(lock, [&] { return stopping_ || leader_ < 0; });
        if (stopping_) return;
        leader_ = index;
        lock.unlock();
        lead(index);
        lock.lock();
        if (leader_ == index) leader_ = -1;  // stopping: leaves the lead to nobody
    }
}

void ServiceLoop::lead(int index) {
    // On the leader's stack, which stays mapped from one request to the next.
    std::array<char, 65536> scratch;
    std::array<epoll_event, kEventsPerWait> events;
    for (;;) {
        // The whole requests first, one at a time: this thread may lose the
        // lead in any answer, and whoever leads next answers the rest.
        while (!whole_.empty()) {
            WholeRequest next = std::move(whole_.front());
            whole_.pop_front();
            if (!answer_as_leader(index, next)) return;
        }
        close_expired();
        const int ready = ::epoll_wait(epoll_fd_, events.data(), kEventsPerWait, wait_ms());
        if (ready < 0 && errno != EINTR) {
            log_(errno_text("epoll_wait"));
            ::usleep(100000);  // not in a tight loop while the kernel refuses
        }
        for (int i = 0; i < ready; ++i) {
            const int fd = events[static_cast<std::size_t>(i)].data.fd;
            if (fd == stop_fd_) return;
            if (fd == listener_) {
                accept_connections();
                continue;
            }
            const auto found = pending_.find(fd);
            if (found == pending_.end()) continue;
            const Received received = receive(fd, found->second, scratch);
            if (received == Received::incomplete) continue;
            if (received == Received::whole) whole_.push_back(WholeRequest{fd, std::move(found->second)});
            if (received == Received::closed) ::close(fd);
            pending_.erase(found);
        }
    }
}

void ServiceLoop::accept_connections() {
    for (;;) {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            log_(errno_text("accept"));
            // Out of descriptors or memory: the listener stays readable, so
            // a pause keeps the leader from spinning until some are free.
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) ::usleep(100000);
            return;
        }
        ucred peer{};
        socklen_t size = sizeof peer;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) {
            log_(errno_text("SO_PEERCRED"));
            ::close(fd);
            continue;
        }
        if (settings_.only_uid && peer.uid != *settings_.only_uid) {
            log_("refused process " + std::to_string(peer.pid) + " of uid " + std::to_string(peer.uid) +
                 ": only root may ask (the plugin connects in task_init_privileged)");
            ::close(fd);
            continue;
        }
        // The request is read without blocking; the answer is sent blocking,
        // bounded as the request is.
        const auto timeout_ms = settings_.request_timeout.count();
        const timeval send_timeout{static_cast<time_t>(timeout_ms / 1000),
                                   static_cast<suseconds_t>(timeout_ms % 1000 * 1000)};
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
        // One event, then the descriptor is disarmed: a whole request is
        // answered without taking it out of the set first.
        epoll_event event{};
        event.events = EPOLLIN | EPOLLONESHOT;
        event.data.fd = fd;
        if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
            log_(task_name(peer) + ": " + errno_text("epoll_ctl"));
            ::close(fd);
            continue;
        }
        Pending& pending = pending_[fd];
        pending = Pending{};
        pending.peer = peer;
        pending.deadline = steady_clock::now() + settings_.request_timeout;
    }
}

ServiceLoop::Received ServiceLoop::receive(int fd, Pending& pending, std::span<char> scratch) {
    for (;;) {
        const ssize_t n = ::recv(fd, scratch.data(), scratch.size(), MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            epoll_event event{};
            event.events = EPOLLIN | EPOLLONESHOT;
            event.data.fd = fd;
            if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event) == 0) return Received::incomplete;
            log_(task_name(pending.peer) + ": " + errno_text("epoll_ctl"));
            return Received::closed;
        }
        if (n < 0) {
            log_(task_name(pending.peer) + ": " + errno_text("receiving the request"));
            return Received::closed;
        }
        // A close: what came is the request (a plugin of an earlier release
        // ended it so; nothing at all was its check that the service is up).
        if (n == 0) return Received::whole;
        pending.bytes.append(scratch.data(), static_cast<std::size_t>(n));
        if (pending.bytes.size() > settings_.max_request_bytes) {
            log_(task_name(pending.peer) + ": the request is larger than the service reads");
            return Received::closed;
        }
        if (pending.end.reached(pending.bytes)) return Received::whole;
    }
}

bool ServiceLoop::answer_as_leader(int index, const WholeRequest& request) {
    const Pending& pending = request.pending;
    const int fd = request.fd;
    {
        const std::lock_guard lock(mutex_);
        answering_ = true;
        answering_since_ = steady_clock::now();
        answering_pid_ = pending.peer.pid;
        const auto ms = settings_.takeover_after.count();
        itimerspec after{};
        after.it_value.tv_sec = static_cast<time_t>(ms / 1000);
        after.it_value.tv_nsec = static_cast<long>(ms % 1000 * 1000000);
        (void)::timerfd_settime(timer_fd_, 0, &after, nullptr);
    }
    std::optional<std::string> line;
    try {
        line = answer_(fd, pending.peer, pending.bytes);
    } catch (...) {
        line = task_name(pending.peer) + ": answering failed (out of memory?)";
    }
    ::close(fd);
    if (line) log_(*line);
    const std::lock_guard lock(mutex_);
    if (leader_ != index) return false;  // the watchdog handed the lead on, and the timer with it
    answering_ = false;
    const itimerspec disarmed{};
    (void)::timerfd_settime(timer_fd_, 0, &disarmed, nullptr);
    return true;
}

void ServiceLoop::watch_answers() {
    for (;;) {
        std::array<pollfd, 2> watched{pollfd{timer_fd_, POLLIN, 0}, pollfd{stop_fd_, POLLIN, 0}};
        if (::poll(watched.data(), watched.size(), -1) < 0) continue;
        if (watched[1].revents != 0) return;
        std::uint64_t expirations = 0;
        // Nothing to read: the leader disarmed or re-armed it since it fired.
        if (::read(timer_fd_, &expirations, sizeof expirations) != sizeof expirations) continue;
        std::unique_lock lock(mutex_);
        if (stopping_) return;
        const auto answering_for = steady_clock::now() - answering_since_;
        if (!answering_ || leader_ < 0 || answering_for < settings_.takeover_after) continue;
        const pid_t stuck = answering_pid_;
        answering_ = false;
        leader_ = -1;
        lock.unlock();
        lead_free_.notify_one();
        log_("task " + std::to_string(stuck) + ": its answer has taken " +
             std::to_string(duration_cast<milliseconds>(answering_for).count()) +
             " ms so far; another thread answers the other tasks meanwhile");
    }
}

void ServiceLoop::close_expired() {
    const auto now = steady_clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->second.deadline > now) {
            ++it;
            continue;
        }
        log_(task_name(it->second.peer) + ": no request within " + duration_text(settings_.request_timeout));
        ::close(it->first);
        it = pending_.erase(it);
    }
}

int ServiceLoop::wait_ms() const {
    if (pending_.empty()) return -1;
    auto first = pending_.begin()->second.deadline;
    for (const auto& [fd, pending] : pending_) first = std::min(first, pending.deadline);
    const auto left = duration_cast<milliseconds>(first - steady_clock::now()).count() + 1;
    return static_cast<int>(std::clamp<long long>(left, 0, 60000));
}

}  // namespace launchguard::slurm
