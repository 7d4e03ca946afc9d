// Whether the task service runs, from the lock beside its socket
// (service_liveness.h). A process does not see its own fcntl locks as a
// conflict, so the holder here is always a forked child, as the service is
// another process than slurmstepd.
#include "service_liveness.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/waiting_child.h"
#include "unit/probe/temp_tree.h"

namespace launchguard::slurm {
namespace {

// The service's lock, taken in a child that waits.
test::WaitingChild service_holding_lock(const std::string& socket_path) {
    return test::WaitingChild([&] {
        std::string why;
        return hold_task_service_lock(socket_path, why) >= 0;
    });
}

// A socket's place in a scratch directory, its lock file beside it.
class ServiceLock : public ::testing::Test {
protected:
    test::TempTree tree;
    const std::string socket = tree.path("task.sock");
};

TEST_F(ServiceLock, WithoutALockFileItIsUnknown) {
    std::string why;
    EXPECT_EQ(task_service_liveness(socket, why), ServiceLiveness::unknown);
    EXPECT_NE(why.find(socket + ".lock: No such file or directory"), std::string::npos) << why;
}

TEST_F(ServiceLock, UpWhileAProcessHoldsTheLockAndDownOnceItIsGone) {
    auto service = service_holding_lock(socket);
    ASSERT_TRUE(service.done());
    std::string why;
    EXPECT_EQ(task_service_liveness(socket, why), ServiceLiveness::up);
    std::string pid;
    std::ifstream(socket + ".lock") >> pid;
    EXPECT_EQ(pid, std::to_string(service.pid()));
    EXPECT_EQ(std::filesystem::status(socket + ".lock").permissions(),
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

    // Killed: the kernel drops the lock, the file stays.
    service.stop();
    EXPECT_EQ(task_service_liveness(socket, why), ServiceLiveness::down);
    EXPECT_NE(why.find("no process holds " + socket + ".lock"), std::string::npos) << why;

    // And a service that starts again takes it again: asking took nothing.
    auto restarted = service_holding_lock(socket);
    EXPECT_TRUE(restarted.done());
    EXPECT_EQ(task_service_liveness(socket, why), ServiceLiveness::up);
}

TEST_F(ServiceLock, ASecondServiceOnTheSameSocketIsRefused) {
    auto first = service_holding_lock(socket);
    ASSERT_TRUE(first.done());
    std::string why;
    EXPECT_LT(hold_task_service_lock(socket, why), 0);
    EXPECT_NE(why.find("held by process " + std::to_string(first.pid())), std::string::npos) << why;
    EXPECT_NE(why.find("another launchguard-task-service runs on this socket"), std::string::npos) << why;
}

// The file is opened without following a link, by the service and by a step.
TEST_F(ServiceLock, ALinkInThePlaceOfTheLockIsNotFollowed) {
    tree.write("elsewhere", "");
    std::filesystem::create_symlink(tree.path("elsewhere"), socket + ".lock");
    std::string why;
    EXPECT_LT(hold_task_service_lock(socket, why), 0);
    EXPECT_NE(why.find(socket + ".lock: Too many levels of symbolic links"), std::string::npos) << why;
    EXPECT_EQ(task_service_liveness(socket, why), ServiceLiveness::unknown);
}

}  // namespace
}  // namespace launchguard::slurm
