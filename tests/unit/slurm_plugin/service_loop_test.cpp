#include "service_loop.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "service_client.h"
#include "support/unix_listener.h"
#include "task_service_protocol.h"

namespace launchguard::slurm {
namespace {

using namespace std::chrono_literals;
using std::chrono::steady_clock;

// A request as the plugin sends it, told apart by one variable.
std::string request_marked(const std::string& mark) {
    TaskRequest request;
    request.mode = Mode::enforce;
    request.env = {{"LG_TEST_MARK", mark}};
    request.first_task = true;
    return encode_task_request(request);
}

// What the loop logged, read while its threads write.
class LogLines {
public:
    void add(const std::string& line) {
        const std::lock_guard lock(mutex_);
        lines_.push_back(line);
    }
    // The first line containing `part` within `wait`, or nothing.
    std::optional<std::string> find(const std::string& part, std::chrono::milliseconds wait = 0ms) const {
        const auto until = steady_clock::now() + wait;
        for (;;) {
            {
                const std::lock_guard lock(mutex_);
                for (const auto& line : lines_) {
                    if (line.find(part) != std::string::npos) return line;
                }
            }
            if (steady_clock::now() >= until) return std::nullopt;
            std::this_thread::sleep_for(10ms);
        }
    }
    std::string all() const {
        const std::lock_guard lock(mutex_);
        std::string text;
        for (const auto& line : lines_) text += line + "\n";
        return text;
    }

private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

// A connection as a task makes it, with a 10 s bound on each receive.
int connect_to(const test::UnixListener& listener) {
    std::string why;
    const int fd = connect_task_service(listener.path(), 10, why);
    EXPECT_GE(fd, 0) << why;
    return fd;
}

// Whether `fd` has something to read (or was closed) within `wait`.
bool readable_within(int fd, std::chrono::milliseconds wait) {
    pollfd ready{fd, POLLIN, 0};
    return ::poll(&ready, 1, static_cast<int>(wait.count())) == 1;
}

// Everything the loop sent on `fd` until it closed the connection.
std::string answer_on(int fd) {
    std::string bytes;
    char chunk[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return bytes;
        bytes.append(chunk, static_cast<std::size_t>(n));
    }
}

// Answers "answered:MARK", MARK being the request's LG_TEST_MARK, after what
// `before_answer` does for it.
struct EchoAnswers {
    std::function<void(const std::string& mark)> before_answer = [](const std::string&) {};
    std::mutex mutex;
    std::vector<std::pair<pid_t, std::string>> seen;  // peer and request, in the order answered

    ServiceLoop::Answer answer() {
        return [this](int fd, const ucred& peer, const std::string& request) -> std::optional<std::string> {
            std::string mark = "(none)";
            if (auto decoded = decode_task_request(request)) {
                if (auto found = decoded->env.find("LG_TEST_MARK"); found != decoded->env.end()) mark = found->second;
            } else if (!request.empty()) {
                mark = "(not a request)";
            }
            {
                const std::lock_guard lock(mutex);
                seen.emplace_back(peer.pid, request.empty() ? "" : mark);
            }
            if (request.empty()) return std::nullopt;
            before_answer(mark);
            (void)send_message(fd, "answered:" + mark);
            return std::nullopt;
        };
    }
    std::size_t count() {
        const std::lock_guard lock(mutex);
        return seen.size();
    }
};

ServiceLoopSettings as_this_user() {
    ServiceLoopSettings settings;
    settings.only_uid = ::geteuid();
    return settings;
}

// A loop on a listener of its own, answering as `answers` says and logging
// into `log`; started by each test with its settings.
class ServiceLoopTest : public ::testing::Test {
protected:
    void start(ServiceLoopSettings settings = as_this_user()) {
        std::string why;
        loop = ServiceLoop::start(
            listener.fd(), answers.answer(), [this](const std::string& line) { log.add(line); }, settings, why);
        ASSERT_NE(loop, nullptr) << why;
    }
    int connect() const { return connect_to(listener); }

    test::UnixListener listener;
    EchoAnswers answers;
    LogLines log;
    std::unique_ptr<ServiceLoop> loop;  // last: stopped first
};

TEST_F(ServiceLoopTest, AnswersEachRequestOnceItIsWholeAndOthersMeanwhile) {
    start();

    const std::string first = request_marked("first");
    const int slow = connect();
    ASSERT_TRUE(send_message(slow, first.substr(0, first.size() / 2)));
    // Half a request is not answered: the loop waits for the rest.
    EXPECT_FALSE(readable_within(slow, 200ms));

    // Another task's whole request is answered while the first is half sent.
    const int quick = connect();
    ASSERT_TRUE(send_message(quick, request_marked("second")));
    ASSERT_TRUE(readable_within(quick, 5000ms));
    EXPECT_EQ(answer_on(quick), "answered:second");

    ASSERT_TRUE(send_message(slow, first.substr(first.size() / 2)));  // the sending side stays open
    ASSERT_TRUE(readable_within(slow, 5000ms));
    EXPECT_EQ(answer_on(slow), "answered:first");
    ::close(slow);
    ::close(quick);

    const std::lock_guard lock(answers.mutex);
    ASSERT_EQ(answers.seen.size(), 2U);
    EXPECT_EQ(answers.seen[0], std::make_pair(::getpid(), std::string("second")));
    EXPECT_EQ(answers.seen[1], std::make_pair(::getpid(), std::string("first")));
    EXPECT_EQ(log.all(), "");
}

TEST_F(ServiceLoopTest, ARequestEndedByTheTasksCloseIsAnsweredAndAnEmptyOneIsNot) {
    start();

    // A plugin of an earlier release ended its request by closing its side.
    const int ended_by_close = connect();
    ASSERT_TRUE(send_message(ended_by_close, "not a whole request"));
    ASSERT_EQ(::shutdown(ended_by_close, SHUT_WR), 0);
    EXPECT_EQ(answer_on(ended_by_close), "answered:(not a request)");
    ::close(ended_by_close);

    // ... and checked that the service is up by connecting and closing.
    const int probe = connect();
    ASSERT_EQ(::shutdown(probe, SHUT_WR), 0);
    EXPECT_EQ(answer_on(probe), "");
    ::close(probe);
    EXPECT_EQ(answers.count(), 2U);
}

TEST_F(ServiceLoopTest, AConnectionThatSendsNoRequestIsClosedAtItsTimeout) {
    ServiceLoopSettings settings = as_this_user();
    settings.request_timeout = 300ms;
    start(settings);

    const auto connected_at = steady_clock::now();
    const int silent = connect();
    ASSERT_TRUE(readable_within(silent, 5000ms)) << "still open after 5 s";
    const auto closed_after = steady_clock::now() - connected_at;
    EXPECT_EQ(answer_on(silent), "");
    ::close(silent);
    EXPECT_GE(closed_after, 290ms);
    const auto line = log.find("no request within 300 ms", 2000ms);
    ASSERT_TRUE(line) << log.all();
    EXPECT_EQ(*line, "task " + std::to_string(::getpid()) + ": no request within 300 ms");
    EXPECT_EQ(answers.count(), 0U);
}

TEST_F(ServiceLoopTest, AnAnswerThatHangsHoldsNeitherTheRequestsBesideItNorTheLaterOnes) {
    std::promise<void> release;
    const std::shared_future<void> released = release.get_future().share();
    answers.before_answer = [released](const std::string& mark) {
        if (mark == "slow") std::this_thread::sleep_for(100ms);  // below the takeover
        if (mark == "stuck") released.wait();
    };
    ServiceLoopSettings settings = as_this_user();
    settings.takeover_after = 300ms;
    start(settings);
    // Destroyed before the loop, which waits for the stuck answer: a failed
    // assertion cannot leave the test hanging.
    struct ReleasedAtEnd {
        std::promise<void>& promise;
        bool done = false;
        void now() {
            if (!std::exchange(done, true)) promise.set_value();
        }
        ~ReleasedAtEnd() { now(); }
    } stuck_release{release};

    // While "slow" is answered, "stuck" and "beside" arrive: the leader
    // takes both whole requests at once and hangs in the first.
    const int slow = connect();
    ASSERT_TRUE(send_message(slow, request_marked("slow")));
    std::this_thread::sleep_for(30ms);
    const int stuck = connect();
    const int beside = connect();
    ASSERT_TRUE(send_message(stuck, request_marked("stuck")));
    ASSERT_TRUE(send_message(beside, request_marked("beside")));
    EXPECT_EQ(answer_on(slow), "answered:slow");

    const auto asked_at = steady_clock::now();
    const bool beside_answered = readable_within(beside, 5000ms);
    const auto beside_after = steady_clock::now() - asked_at;
    const int later = connect();
    ASSERT_TRUE(send_message(later, request_marked("later")));
    const bool later_answered = readable_within(later, 5000ms);
    EXPECT_FALSE(readable_within(stuck, 0ms));
    stuck_release.now();

    ASSERT_TRUE(beside_answered) << "a request beside the stuck one waited more than 5 s\n" << log.all();
    EXPECT_LT(beside_after, 2000ms);
    EXPECT_EQ(answer_on(beside), "answered:beside");
    ASSERT_TRUE(later_answered) << "a later request waited more than 5 s\n" << log.all();
    EXPECT_EQ(answer_on(later), "answered:later");
    EXPECT_EQ(answer_on(stuck), "answered:stuck");
    const auto line = log.find("another thread answers the other tasks meanwhile");
    ASSERT_TRUE(line) << log.all();
    EXPECT_EQ(line->rfind("task " + std::to_string(::getpid()) + ": its answer has taken ", 0), 0U) << *line;

    // The stuck thread went idle; the loop goes on answering.
    const int after = connect();
    ASSERT_TRUE(send_message(after, request_marked("after")));
    EXPECT_EQ(answer_on(after), "answered:after");
    for (const int fd : {slow, stuck, beside, later, after}) ::close(fd);
    EXPECT_EQ(answers.count(), 5U);
}

TEST_F(ServiceLoopTest, AnotherUsersConnectionIsRefusedAndLogged) {
    ServiceLoopSettings settings;
    settings.only_uid = ::geteuid() + 1;  // not this process's user
    start(settings);

    const int refused = connect();
    (void)send_message(refused, request_marked("refused"));
    ASSERT_TRUE(readable_within(refused, 5000ms));
    EXPECT_EQ(answer_on(refused), "");
    ::close(refused);
    const auto line = log.find("refused process", 2000ms);
    ASSERT_TRUE(line) << log.all();
    EXPECT_EQ(*line, "refused process " + std::to_string(::getpid()) + " of uid " + std::to_string(::geteuid()) +
                         ": only root may ask (the plugin connects in task_init_privileged)");
    EXPECT_EQ(answers.count(), 0U);
}

TEST_F(ServiceLoopTest, ARequestLargerThanTheBoundIsNotAnswered) {
    ServiceLoopSettings settings = as_this_user();
    settings.max_request_bytes = 1000;
    start(settings);

    const int large = connect();
    (void)send_message(large, std::string(5000, 'x'));
    ASSERT_TRUE(readable_within(large, 5000ms));
    EXPECT_EQ(answer_on(large), "");
    ::close(large);
    EXPECT_TRUE(
        log.find("task " + std::to_string(::getpid()) + ": the request is larger than the service reads", 2000ms))
        << log.all();
    EXPECT_EQ(answers.count(), 0U);
}

TEST_F(ServiceLoopTest, StoppingClosesTheConnectionsThatWaitForTheirRequests) {
    start();
    const int waiting = connect();
    ASSERT_TRUE(send_message(waiting, "half a req"));
    std::this_thread::sleep_for(100ms);  // accepted and read by now
    loop.reset();
    ASSERT_TRUE(readable_within(waiting, 5000ms));
    EXPECT_EQ(answer_on(waiting), "");
    ::close(waiting);
    EXPECT_EQ(answers.count(), 0U);
}

}  // namespace
}  // namespace launchguard::slurm
