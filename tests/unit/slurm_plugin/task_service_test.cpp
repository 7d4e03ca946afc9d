#include "task_service.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mount_namespace.h"
#include "service_client.h"
#include "service_loop.h"
#include "support/shared_fixtures.h"
#include "support/unix_listener.h"
#include "support/waiting_child.h"

namespace launchguard::slurm {
namespace {

using namespace std::string_literals;

// The fixture node of the Slurm tests: its topology and sysfs, not this machine's.
TaskRequest fixture_request(Environment env) {
    TaskRequest request;
    request.plugin_args = {"profile=default",
                           "hwloc-xml=" + testing::shared_fixture_path("hwloc/32em64t-2n8c2t-pci-normalio.xml"),
                           "sysfs-root=" LAUNCHGUARD_FIXTURES "/sysfs/kvm-guest-2n", "node-facts-max-age=0"};
    request.mode = Mode::enforce;
    request.env = std::move(env);
    request.job_id = 7;
    request.step_id = 0;
    request.first_task = true;
    return request;
}

std::string told(const TaskAnswer& answer) {
    std::string all;
    for (const auto& text : answer.tell_user) all += text + "\n";
    return all;
}

TEST(TaskService, ChecksTheTaskWithTheEnvironmentItWasSent) {
    TaskService service;
    const TaskAnswer blocked =
        service.serve(fixture_request({{"NCCL_TOPO_FILE", "/nonexistent/topo.xml"}}), ::getpid());
    EXPECT_TRUE(blocked.block) << told(blocked);
    EXPECT_NE(told(blocked).find("BLOCK topo.file-missing"), std::string::npos) << told(blocked);
    ASSERT_EQ(blocked.log_info.size(), 1U);
    EXPECT_NE(blocked.log_info[0].find("decision hook=task_init job=7 step=0"), std::string::npos);
    EXPECT_NE(blocked.log_info[0].find("blocked=topo.file-missing"), std::string::npos) << blocked.log_info[0];

    // The same service again, without the variable: the node read before is
    // not what blocked.
    const TaskAnswer second = service.serve(fixture_request({}), ::getpid());
    EXPECT_EQ(told(second).find("topo.file-missing"), std::string::npos) << told(second);
}

TEST(TaskService, OnlyTheFirstTaskLogsAndTells) {
    TaskService service;
    TaskRequest request = fixture_request({{"NCCL_TOPO_FILE", "/nonexistent/topo.xml"}});
    request.first_task = false;
    const TaskAnswer answer = service.serve(request, ::getpid());
    EXPECT_TRUE(answer.block);
    EXPECT_TRUE(answer.tell_user.empty());
    EXPECT_TRUE(answer.log_info.empty());
}

// A site profile as a YAML file, which the service reads as the CLI does:
// net.qps-low asks for 4 queue pairs at 512 GPUs on the fixture's 100 Gb/s link.
std::string site_profile() {
    const auto path =
        std::filesystem::temp_directory_path() / ("lg-service-profile-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path) << "name: site\n"
                           "nccl:\n"
                           "  qps_per_connection:\n"
                           "    min: 4\n"
                           "    min_total_gpus: 512\n"
                           "    min_link_gbps: 100\n";
    return path.string();
}

// A job of 512 GPUs in patch mode under the site profile at `profile`.
TaskRequest big_job_request(const std::string& profile) {
    TaskRequest request = fixture_request({{"SLURM_GPUS", "512"}});
    request.plugin_args[0] = "profile=" + profile;
    request.mode = Mode::patch;
    return request;
}

TEST(TaskService, PatchModeAnswersTheChangesToMake) {
    TaskService service;
    const std::string profile = site_profile();
    const TaskRequest request = big_job_request(profile);
    const TaskAnswer answer = service.serve(request, ::getpid());
    EXPECT_FALSE(answer.block) << told(answer);
    bool qps = false;
    for (const auto& change : answer.env_patch) qps |= change.name == "NCCL_IB_QPS_PER_CONNECTION" && change.value;
    EXPECT_TRUE(qps) << told(answer);
    std::filesystem::remove(profile);
}

TEST(TaskService, ASiteProfileThatChangesIsReadAgain) {
    TaskService service;
    const std::string profile = site_profile();
    const TaskRequest request = big_job_request(profile);
    EXPECT_FALSE(service.serve(request, ::getpid()).env_patch.empty());
    // The operator drops the requirement: the next task is not patched.
    std::ofstream(profile, std::ios::trunc) << "name: site\n";
    std::filesystem::last_write_time(profile, std::filesystem::last_write_time(profile) + std::chrono::seconds(5));
    const TaskAnswer after = service.serve(request, ::getpid());
    EXPECT_TRUE(after.env_patch.empty()) << told(after);
    std::filesystem::remove(profile);
}

TEST(TaskService, ATaskThatIsGoneIsAnAnswerAsOnErrorSays) {
    TaskService service;
    TaskRequest request = fixture_request({});
    const TaskAnswer allowed = service.serve(request, 0x7ffffffe);
    EXPECT_FALSE(allowed.block);
    ASSERT_EQ(allowed.tell_user.size(), 1U);
    EXPECT_NE(allowed.tell_user[0].find("cannot read the task's ids"), std::string::npos) << allowed.tell_user[0];
    request.plugin_args.push_back("on-error=block");
    EXPECT_TRUE(service.serve(request, 0x7ffffffe).block);
}

// A task in a mount namespace of its own, as a forked child that unshared
// one and waits.
test::WaitingChild task_in_its_own_mount_namespace() {
    return test::WaitingChild([] { return ::unshare(CLONE_NEWNS) == 0; });
}

// The host's side (the job's environment before pyxis, the service's "/") is
// compared with the task's only when the task moved into another mount
// namespace after it was forked: then a topology file that the host's
// environment names, and that the task's does not, is a file that did not
// reach it. A task that stayed where it was forked is its own host side.
TEST(TaskService, OnlyATaskThatMovedIsComparedWithTheHostSide) {
    if (::geteuid() != 0) GTEST_SKIP() << "a mount namespace of its own needs root";
    const auto dir = std::filesystem::temp_directory_path() / ("lg-host-side-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string host_topology = (dir / "topo.xml").string();
    std::ofstream(host_topology) << "<system version=\"1\"></system>\n";
    auto task = task_in_its_own_mount_namespace();
    ASSERT_TRUE(task.done()) << "unshare(CLONE_NEWNS) failed in the child";

    TaskService service;
    TaskRequest request = fixture_request({});  // the task's environment lacks NCCL_TOPO_FILE
    request.host_env = PackedEnvironment(Environment{{"NCCL_TOPO_FILE", host_topology}});
    const std::string not_reached = "host topology file " + host_topology;

    // Forked in this process's namespace, now in its own: it moved.
    request.forked_namespace = current_mount_namespace();
    ASSERT_TRUE(request.forked_namespace);
    const TaskAnswer moved = service.serve(request, task.pid());
    EXPECT_NE(told(moved).find(not_reached), std::string::npos) << told(moved);

    // Forked where it is now: the host's environment is not looked at.
    request.forked_namespace = mount_namespace_of("/proc/" + std::to_string(task.pid()));
    ASSERT_TRUE(request.forked_namespace);
    const TaskAnswer stayed = service.serve(request, task.pid());
    EXPECT_EQ(told(stayed).find(not_reached), std::string::npos) << told(stayed);

    // Moved, but user_init kept no host environment: nothing to compare.
    request.forked_namespace = current_mount_namespace();
    request.host_env.reset();
    const TaskAnswer no_host = service.serve(request, task.pid());
    EXPECT_EQ(told(no_host).find(not_reached), std::string::npos) << told(no_host);
    std::filesystem::remove_all(dir);
}

// The tasks of one step share what their filesystem answered: a later task
// of the step is answered from the first look, a task of another step looks
// afresh (TaskService::StepFilesKey).
TEST(TaskService, TheTasksOfOneStepShareTheirFileAnswers) {
    const auto dir = std::filesystem::temp_directory_path() / ("lg-step-files-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string topology = (dir / "topo.xml").string();
    TaskService service;
    TaskRequest request = fixture_request({{"NCCL_TOPO_FILE", topology}});
    request.step_id = 3;
    EXPECT_NE(told(service.serve(request, ::getpid())).find("topo.file-missing"), std::string::npos);

    std::ofstream(topology) << "<system version=\"1\"></system>\n";
    // The same step: the file was missing when the step's first task looked.
    request.plugin_args.push_back("timing=1");
    const TaskAnswer same_step = service.serve(request, ::getpid());
    EXPECT_NE(told(same_step).find("topo.file-missing"), std::string::npos);
    ASSERT_FALSE(same_step.log_info.empty());
    EXPECT_EQ(same_step.log_info.back().find("step_files=0"), std::string::npos) << same_step.log_info.back();
    EXPECT_NE(same_step.log_info.back().find("step_files="), std::string::npos) << same_step.log_info.back();
    // The next step looks again.
    request.step_id = 4;
    const TaskAnswer next_step = service.serve(request, ::getpid());
    EXPECT_EQ(told(next_step).find("topo.file-missing"), std::string::npos) << told(next_step);
    ASSERT_FALSE(next_step.log_info.empty());
    EXPECT_NE(next_step.log_info.back().find("step_files=0"), std::string::npos) << next_step.log_info.back();
    // A task whose mount namespace is another is not the same filesystem.
    std::filesystem::remove(topology);
    if (::geteuid() == 0) {
        auto other = task_in_its_own_mount_namespace();
        ASSERT_TRUE(other.done());
        request.forked_namespace = mount_namespace_of("/proc/" + std::to_string(other.pid()));
        const TaskAnswer other_namespace = service.serve(request, other.pid());
        EXPECT_NE(told(other_namespace).find("topo.file-missing"), std::string::npos) << told(other_namespace);
    }
    std::filesystem::remove_all(dir);
}

// A task of the same step but another user reads the files as itself, not
// with the answers its step's root task got.
TEST(TaskService, ATaskOfAnotherUserDoesNotShareTheStepsFileAnswers) {
    if (::geteuid() != 0) GTEST_SKIP() << "a task of another user needs root";
    const auto dir = std::filesystem::temp_directory_path() / ("lg-step-user-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);  // 0700, root's
    const std::string topology = (dir / "topo.xml").string();
    std::ofstream(topology) << "<system version=\"1\"></system>\n";

    // Dumpable again after setuid (which cleared it), so that its /proc
    // entry is its own user's and the service, as that user, may look in.
    test::WaitingChild nobody([] {
        return ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 && ::setuid(65534) == 0 &&
               ::prctl(PR_SET_DUMPABLE, 1) == 0;
    });
    ASSERT_TRUE(nobody.done());

    TaskService service;
    TaskRequest request = fixture_request({{"NCCL_TOPO_FILE", topology}});
    const TaskAnswer as_root = service.serve(request, ::getpid());
    EXPECT_EQ(told(as_root).find("topo.file-missing"), std::string::npos) << told(as_root);
    const TaskAnswer as_nobody = service.serve(request, nobody.pid());
    EXPECT_NE(told(as_nobody).find("cannot look up " + topology + ": Permission denied"), std::string::npos)
        << told(as_nobody);

    nobody.stop();
    std::filesystem::remove_all(dir);
}

TEST(TaskService, ABadPlugstackLineIsReportedNotBlocked) {
    TaskService service;
    TaskRequest request = fixture_request({});
    request.plugin_args.push_back("colour=red");
    const TaskAnswer answer = service.serve(request, ::getpid());
    EXPECT_FALSE(answer.block);
    ASSERT_EQ(answer.log_error.size(), 1U);
    EXPECT_NE(answer.log_error[0].find("colour=red"), std::string::npos) << answer.log_error[0];
}

// A FUSE mount that never answers: the kernel waits for the answer to its
// INIT request, so every access below the mount blocks, as on a hung FUSE
// or network mount, until release() closes the device and the kernel ends
// the waits with an error. Mounted in a mount namespace of this test
// process's own (unshare on the main thread, which is the thread group
// leader that /proc/PID/root follows), so that no other process sees it.
class HungFuseMount {
public:
    HungFuseMount() {
        if (::geteuid() != 0) {
            why_ = "mounting needs root";
            return;
        }
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            why_ = std::string("a mount namespace of its own: ") + std::strerror(errno);
            return;
        }
        char dir[] = "/tmp/lg-hung-fuse-XXXXXX";
        if (::mkdtemp(dir) == nullptr) {
            why_ = "mkdtemp failed";
            return;
        }
        dir_ = dir;
        device_ = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (device_ < 0) {
            why_ = std::string("/dev/fuse: ") + std::strerror(errno);
            return;
        }
        const std::string options = "fd=" + std::to_string(device_) + ",rootmode=40000,user_id=0,group_id=0";
        if (::mount("launchguard-test", dir_.c_str(), "fuse.launchguard-test", MS_NOSUID | MS_NODEV, options.c_str()) !=
            0) {
            why_ = std::string("mount fuse: ") + std::strerror(errno);
            return;
        }
        mounted_ = true;
    }
    HungFuseMount(const HungFuseMount&) = delete;
    HungFuseMount& operator=(const HungFuseMount&) = delete;
    ~HungFuseMount() {
        release();
        if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
        if (!dir_.empty()) ::rmdir(dir_.c_str());
    }
    bool mounted() const { return mounted_; }
    const std::string& why() const { return why_; }
    const std::string& path() const { return dir_; }
    void release() {
        if (device_ >= 0) ::close(std::exchange(device_, -1));
    }

private:
    std::string dir_;
    std::string why_;
    int device_ = -1;
    bool mounted_ = false;
};

// Joins a thread at the end of the scope (declared before what unblocks it,
// so that it is destroyed after).
struct JoinedAtEnd {
    std::thread thread;
    ~JoinedAtEnd() {
        if (thread.joinable()) thread.join();
    }
};

std::string not_checked(const TaskAnswer& answer) {
    for (const auto& line : answer.log_error) {
        if (line.find("was not checked") != std::string::npos) return line;
    }
    return "";
}

// A request whose check hangs in `hung`, and one that asks to wait for
// another check 1 s at most (half its node-read-timeout=2). Both keep the
// node read once, so that the stuck check reaches the hung mount within
// milliseconds, under emulation too.
std::pair<TaskRequest, TaskRequest> stuck_and_next(const HungFuseMount& hung) {
    std::pair<TaskRequest, TaskRequest> requests{fixture_request({{"NCCL_TOPO_FILE", hung.path() + "/topo.xml"}}),
                                                 fixture_request({})};
    for (TaskRequest* request : {&requests.first, &requests.second}) {
        std::replace(request->plugin_args.begin(), request->plugin_args.end(), std::string("node-facts-max-age=0"),
                     std::string("node-facts-max-age=600"));
    }
    requests.second.plugin_args.push_back("node-read-timeout=2");
    return requests;
}

TEST(TaskService, ACheckStuckInAHungMountHoldsOtherTasksHalfTheirTimeoutAtMost) {
    JoinedAtEnd stuck_task;
    HungFuseMount hung;
    if (!hung.mounted()) GTEST_SKIP() << "no hung FUSE mount here: " << hung.why();
    TaskService service;
    auto [stuck, next] = stuck_and_next(hung);
    EXPECT_EQ(not_checked(service.serve(next, ::getpid())), "");  // loads the profile, reads the node
    TaskAnswer stuck_answer;
    stuck_task.thread = std::thread([&] { stuck_answer = service.serve(stuck, ::getpid()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its check has begun and hangs

    using std::chrono::steady_clock;
    auto start = steady_clock::now();
    // Asked on a thread of its own: a service without the bound would wait
    // for the stuck check, which this test would then have to release.
    std::future<TaskAnswer> asked =
        std::async(std::launch::async, [&service, &next] { return service.serve(next, ::getpid()); });
    if (asked.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
        hung.release();
        asked.wait();
        FAIL() << "a task waited for the stuck check for more than 5 s";
    }
    const TaskAnswer waited = asked.get();
    const auto waited_for = steady_clock::now() - start;
    EXPECT_GE(waited_for, std::chrono::milliseconds(900));
    EXPECT_LT(waited_for, std::chrono::milliseconds(1900));
    const std::string reason = not_checked(waited);
    EXPECT_NE(reason.find("check of task " + std::to_string(::getpid()) + " has not returned"), std::string::npos)
        << reason;
    EXPECT_FALSE(waited.block);  // on-error=allow
    EXPECT_EQ(waited.tell_user.size(), 1U);

    // Held longer than the bound by now: the next task is answered at once.
    start = steady_clock::now();
    const TaskAnswer at_once = service.serve(next, ::getpid());
    EXPECT_LT(steady_clock::now() - start, std::chrono::milliseconds(500));
    EXPECT_NE(not_checked(at_once), "");

    // The mount answers (with an error): the stuck check returns, and the
    // service checks again.
    hung.release();
    stuck_task.thread.join();
    EXPECT_EQ(not_checked(stuck_answer), "");
    const TaskAnswer after = service.serve(next, ::getpid());
    EXPECT_EQ(not_checked(after), "") << not_checked(after);
    EXPECT_EQ(after.log_info.size(), 1U);  // its decision line
}

// Waits up to `seconds` for `fd` to have something to read.
bool readable_within(int fd, int seconds) {
    pollfd ready{fd, POLLIN, 0};
    return ::poll(&ready, 1, seconds * 1000) == 1;
}

// The service as launchguard-task-service runs it: its loop (service_loop.h)
// on a socket of its own, answering through TaskService::answer_request,
// with what it logs kept, and apart from that the lines answer_request
// returned: what went wrong on a connection. (The loop's own lines, such as
// a hand-over when an answer takes 200 ms, as a first check may under
// emulation, are not about the connection.)
class ServiceOnSocket {
public:
    ServiceOnSocket() {
        ServiceLoopSettings settings;
        settings.only_uid = ::geteuid();
        std::string why;
        loop_ = ServiceLoop::start(
            listener_.fd(),
            [this](int fd, const ucred& peer, const std::string& request) {
                auto problem = service_.answer_request(fd, peer.pid, request);
                if (problem) {
                    const std::lock_guard lock(log_mutex_);
                    problems_.push_back(*problem);
                }
                return problem;
            },
            [this](const std::string& line) {
                const std::lock_guard lock(log_mutex_);
                log_.push_back(line);
            },
            settings, why);
        EXPECT_NE(loop_, nullptr) << why;
    }
    bool running() const { return loop_ != nullptr; }
    const std::string& path() const { return listener_.path(); }
    std::vector<std::string> log() const {
        const std::lock_guard lock(log_mutex_);
        return log_;
    }
    std::vector<std::string> problems() const {
        const std::lock_guard lock(log_mutex_);
        return problems_;
    }

private:
    test::UnixListener listener_;
    TaskService service_;
    mutable std::mutex log_mutex_;
    std::vector<std::string> log_;
    std::vector<std::string> problems_;
    std::unique_ptr<ServiceLoop> loop_;  // last: stopped first
};

TEST(TaskService, AnswersARequestWithoutWaitingForTheTaskToCloseItsSide) {
    ServiceOnSocket service;
    ASSERT_TRUE(service.running());
    std::string why;
    const int task = connect_task_service(service.path(), 20, why);
    ASSERT_GE(task, 0) << why;
    const std::string request = encode_task_request(fixture_request({{"NCCL_TOPO_FILE", "/nonexistent/topo.xml"}}));
    ASSERT_EQ(::write(task, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    // The task's side stays open, as a task waiting for its answer has it.
    const bool answered = readable_within(task, 20);
    std::string bytes(65536, '\0');
    const ssize_t n = answered ? ::read(task, bytes.data(), bytes.size()) : -1;
    ::close(task);
    ASSERT_TRUE(answered) << "no answer while the task's side was open";
    ASSERT_GT(n, 0);
    bytes.resize(static_cast<std::size_t>(n));
    EXPECT_EQ(service.problems(), std::vector<std::string>{}) << "the log:\n"
                                                              << ::testing::PrintToString(service.log());
    auto answer = decode_task_answer(bytes);
    ASSERT_TRUE(answer) << answer.error().to_string();
    EXPECT_TRUE(answer->block);
}

TEST(TaskService, AMalformedRequestIsAnsweredAndReported) {
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
    TaskService service;
    const std::string request = "launchguard-task/1\0colour\0red\0end\0\0"s;
    const auto problem = service.answer_request(ends[1], 4242, request);
    ASSERT_TRUE(problem);
    EXPECT_NE(problem->find("task 4242: colour"), std::string::npos) << *problem;
    std::string bytes(4096, '\0');
    const ssize_t n = ::read(ends[0], bytes.data(), bytes.size());
    ::close(ends[0]);
    ::close(ends[1]);
    ASSERT_GT(n, 0);
    bytes.resize(static_cast<std::size_t>(n));
    auto answer = decode_task_answer(bytes);
    ASSERT_TRUE(answer) << answer.error().to_string();
    ASSERT_EQ(answer->log_error.size(), 1U);
    EXPECT_NE(answer->log_error[0].find("refused the request"), std::string::npos) << answer->log_error[0];
}

// The service as it runs: its loop (service_loop.h) on a socket, a check
// stuck on a hung mount, and the next task asking over a connection.
TEST(TaskService, ThroughItsLoopATaskAfterAStuckCheckIsAnsweredWithinHalfItsTimeout) {
    HungFuseMount hung;
    if (!hung.mounted()) GTEST_SKIP() << "no hung FUSE mount here: " << hung.why();
    ServiceOnSocket service;
    ASSERT_TRUE(service.running());
    std::string why;
    // Released before the loop is stopped, which waits for the stuck check.
    struct ReleasedAtEnd {
        HungFuseMount& mount;
        ~ReleasedAtEnd() { mount.release(); }
    } released{hung};

    const auto [stuck, next] = stuck_and_next(hung);
    const auto ask = [&](const TaskRequest& request) {
        const int fd = connect_task_service(service.path(), 10, why);
        EXPECT_GE(fd, 0) << why;
        return ask_task_service(fd, encode_task_request(request));
    };
    auto first = ask(next);  // loads the profile, reads the node
    ASSERT_TRUE(first) << first.error().to_string();
    EXPECT_EQ(not_checked(*first), "");

    const int stuck_fd = connect_task_service(service.path(), 20, why);
    ASSERT_GE(stuck_fd, 0) << why;
    ASSERT_TRUE(send_message(stuck_fd, encode_task_request(stuck)));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its check has begun and hangs

    const auto start = std::chrono::steady_clock::now();
    auto waited = ask(next);
    const auto waited_for = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(waited) << waited.error().to_string();
    EXPECT_LT(waited_for, std::chrono::milliseconds(1900));
    EXPECT_NE(not_checked(*waited).find("check of task " + std::to_string(::getpid()) + " has not returned"),
              std::string::npos)
        << not_checked(*waited);

    hung.release();  // the stuck check returns with an error, and is answered
    char byte = 0;
    EXPECT_EQ(::recv(stuck_fd, &byte, 1, 0), 1);
    ::close(stuck_fd);
    auto after = ask(next);
    ASSERT_TRUE(after) << after.error().to_string();
    EXPECT_EQ(not_checked(*after), "");
    const auto log = service.log();
    ASSERT_FALSE(log.empty());
    EXPECT_NE(log[0].find("its answer has taken"), std::string::npos) << log[0];
}

TEST(ServiceClient, NamesTheSocketItCannotReach) {
    std::string why;
    EXPECT_EQ(connect_task_service("/nonexistent/launchguard/task.sock", 1, why), -1);
    EXPECT_NE(why.find("/nonexistent/launchguard/task.sock"), std::string::npos) << why;
}

TEST(ServiceClient, AServiceThatNeverAnswersTimesOut) {
    test::UnixListener listener;  // answers nothing by itself
    std::string why;
    const int fd = connect_task_service(listener.path(), 1, why);
    ASSERT_GE(fd, 0) << why;
    const auto start = std::chrono::steady_clock::now();
    auto answer = ask_task_service(fd, encode_task_request(fixture_request({})));
    ASSERT_FALSE(answer);
    EXPECT_NE(answer.error().message.find("no answer within the timeout"), std::string::npos)
        << answer.error().to_string();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ServiceClient, AConnectionClosedWithoutAnAnswerIsAnError) {
    testing::skip_test_without_shared_fixtures();  // fixture_request() below, in a thread's time
    test::UnixListener listener;                   // answers nothing by itself
    std::string why;
    const int fd = connect_task_service(listener.path(), 5, why);
    ASSERT_GE(fd, 0) << why;
    // Reads the whole request, then closes without a word.
    std::thread closer([&] {
        const int connection = ::accept(listener.fd(), nullptr, nullptr);
        char buffer[4096];
        while (::read(connection, buffer, sizeof buffer) > 0) {
        }
        ::close(connection);
    });
    auto answer = ask_task_service(fd, encode_task_request(fixture_request({})));
    closer.join();
    ASSERT_FALSE(answer);
    EXPECT_NE(answer.error().message.find("without an answer"), std::string::npos) << answer.error().to_string();
}

TEST(ServiceClient, AConnectionClosedBeforeTheRequestIsAnError) {
    testing::skip_test_without_shared_fixtures();  // fixture_request() below, in a thread's time
    test::UnixListener listener;                   // answers nothing by itself
    std::string why;
    const int fd = connect_task_service(listener.path(), 5, why);
    ASSERT_GE(fd, 0) << why;
    // Whether the close comes before or during the send (a broken pipe or a
    // reset) or after it (no answer) depends on scheduling: never an answer.
    std::thread closer([&] { ::close(::accept(listener.fd(), nullptr, nullptr)); });
    auto answer = ask_task_service(fd, encode_task_request(fixture_request({})));
    closer.join();
    EXPECT_FALSE(answer);
}

TEST(ServiceClient, DecodesTheAnswerWithoutWaitingForTheServiceToClose) {
    testing::skip_test_without_shared_fixtures();  // fixture_request() below, in a thread's time
    test::UnixListener listener;                   // answers nothing by itself
    std::string why;
    const int fd = connect_task_service(listener.path(), 20, why);
    ASSERT_GE(fd, 0) << why;
    TaskAnswer sent;
    sent.block = true;
    sent.tell_user = {"told"};
    int connection = -1;
    std::thread server([&] {
        connection = ::accept(listener.fd(), nullptr, nullptr);
        char buffer[4096];
        while (::read(connection, buffer, sizeof buffer) > 0) {
        }
        const std::string bytes = encode_task_answer(sent);
        EXPECT_EQ(::write(connection, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
        // The connection stays open until the client has returned: a client
        // that read to the close would wait for its 20 s timeout.
    });
    const auto start = std::chrono::steady_clock::now();
    auto answer = ask_task_service(fd, encode_task_request(fixture_request({})));
    const auto took = std::chrono::steady_clock::now() - start;
    server.join();
    ::close(connection);
    ASSERT_TRUE(answer) << answer.error().to_string();
    EXPECT_TRUE(answer->block);
    EXPECT_EQ(answer->tell_user, sent.tell_user);
    EXPECT_LT(took, std::chrono::seconds(10));
}

}  // namespace
}  // namespace launchguard::slurm
