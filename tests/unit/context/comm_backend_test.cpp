// The communication backend a command selects: options, a python -c's
// init_process_group call, a variable the command reads; NCCL wins over any
// other named beside it, and torchrun's rendezvous backend selects nothing.
#include "context/comm_backend.h"

#include <gtest/gtest.h>

namespace launchguard {
namespace {

Fact<CommBackend> backend(const std::vector<std::string>& words, const Environment& env = {}) {
    return comm_backend_from_command(words, env, "the command");
}

TEST(CommBackend, AnOptionSelectsIt) {
    auto gloo = backend({"python", "train.py", "--backend", "gloo"});
    ASSERT_TRUE(gloo);
    EXPECT_EQ(*gloo, CommBackend::gloo);
    EXPECT_NE(gloo.source().find("--backend gloo"), std::string::npos) << gloo.source();
    EXPECT_EQ(*backend({"python", "train.py", "--dist-backend=mpi"}), CommBackend::mpi);
    EXPECT_EQ(*backend({"torchrun", "--nproc-per-node=8", "train.py", "--backend=nccl"}), CommBackend::nccl);
    EXPECT_EQ(*backend({"python", "train.py", "--dist_backend", "'gloo'"}), CommBackend::gloo);
}

TEST(CommBackend, PythonCodeSelectsIt) {
    EXPECT_EQ(*backend({"python", "-c", "import torch.distributed as dist; dist.init_process_group(\"gloo\")"}),
              CommBackend::gloo);
    EXPECT_EQ(*backend({"python", "-c", "dist.init_process_group(backend='mpi', init_method='env://')"}),
              CommBackend::mpi);
    EXPECT_EQ(*backend({"bash", "-c", "python -c 'dist.init_process_group( \"nccl\" )'"}), CommBackend::nccl);
}

TEST(CommBackend, AVariableTheCommandReadsSelectsIt) {
    EXPECT_EQ(*backend({"python", "train.py", "--backend", "$BACKEND"}, {{"BACKEND", "gloo"}}), CommBackend::gloo);
    EXPECT_EQ(*backend({"python", "train.py", "--backend=${DIST_BACKEND}"}, {{"DIST_BACKEND", "mpi"}}),
              CommBackend::mpi);
    // Read by the program itself (os.environ["BACKEND"]), named in the command.
    EXPECT_EQ(*backend({"python", "-c", "init(os.environ['BACKEND'])"}, {{"BACKEND", "gloo"}}), CommBackend::gloo);
    // A variable the command does not name decides nothing.
    EXPECT_FALSE(backend({"python", "train.py"}, {{"BACKEND", "gloo"}}));
}

TEST(CommBackend, NcclWinsOverAnotherNamedBesideIt) {
    EXPECT_EQ(*backend({"python", "train.py", "--backend", "gloo", "--dist-backend", "nccl"}), CommBackend::nccl);
    EXPECT_EQ(*backend({"python", "train.py", "--backend", "cpu:gloo,cuda:nccl"}), CommBackend::nccl);
}

TEST(CommBackend, UnknownWhenNothingSelectsIt) {
    auto none = backend({"torchrun", "--rdzv-backend=c10d", "--rdzv_backend", "c10d", "train.py"});
    EXPECT_FALSE(none);
    EXPECT_NE(none.reason().find("selects no communication backend"), std::string::npos) << none.reason();
    EXPECT_FALSE(backend({"python", "train.py", "--backend", "ucc"}));
    EXPECT_FALSE(backend({"python", "train.py", "--backend", "$UNSET"}));
    EXPECT_FALSE(backend({"python", "train.py", "--backend-url", "gloo"}));
    EXPECT_FALSE(backend({"python", "train.py", "--rdzv-backend", "gloo"}));
    EXPECT_FALSE(backend({}));
}

}  // namespace
}  // namespace launchguard
