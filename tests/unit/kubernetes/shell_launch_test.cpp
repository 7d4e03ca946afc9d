// Reading a container's command and args the way its shell runs them.
#include <gtest/gtest.h>

#include "kubernetes/quantity.h"
#include "kubernetes/shell_launch.h"

namespace launchguard::kubernetes {
namespace {

std::string value_of(const std::vector<ShellAssignment>& list, const std::string& name) {
    std::string found = "<absent>";
    for (const auto& set : list) {
        if (set.name == name) found = set.value ? *set.value : "<unknown>";
    }
    return found;
}

TEST(ShellLaunch, ExportsAndPrefixAssignments) {
    auto launch = read_shell_launch({"/bin/bash", "-c"}, {"export NCCL_DEBUG=INFO NCCL_ALGO='Ring'; X=1\n"
                                                          "export X\n"
                                                          "NCCL_IB_HCA=\"mlx5_0:1\" python train.py  # NCCL_PROTO=LL\n"
                                                          "export NCCL_SOCKET_IFNAME=$IFACE\n"
                                                          "source /etc/nccl-env.sh\n"});
    EXPECT_EQ(value_of(launch.exports, "NCCL_DEBUG"), "INFO");
    EXPECT_EQ(value_of(launch.exports, "NCCL_ALGO"), "Ring");
    EXPECT_EQ(value_of(launch.exports, "X"), "1");
    EXPECT_EQ(value_of(launch.exports, "NCCL_IB_HCA"), "mlx5_0:1");
    EXPECT_EQ(value_of(launch.exports, "NCCL_PROTO"), "<absent>");
    EXPECT_EQ(value_of(launch.exports, "NCCL_SOCKET_IFNAME"), "<unknown>");
    ASSERT_EQ(launch.open_sources.size(), 1U);
    EXPECT_EQ(launch.open_sources[0], "line 5: source /etc/nccl-env.sh may set any variable");
}

TEST(ShellLaunch, MpirunMinusXAndTheProgramsOwnFlags) {
    auto launch = read_shell_launch({"/opt/amazon/openmpi/bin/mpirun", "--allow-run-as-root", "-np", "16", "-N", "8",
                                     "--mca", "pml", "^ucx", "-x", "PATH", "-x", "NCCL_BUFFSIZE=8388608",
                                     "/opt/nccl-tests/build/all_reduce_perf", "-n", "100", "-x", "NOT_MPI=1"},
                                    {});
    EXPECT_TRUE(launch.runs_mpi);
    EXPECT_EQ(launch.mpi_ranks, 16);
    ASSERT_EQ(launch.rank_exports.size(), 2U);
    EXPECT_TRUE(launch.rank_exports[0].forwarded);
    EXPECT_EQ(launch.rank_exports[0].name, "PATH");
    EXPECT_EQ(value_of(launch.rank_exports, "NCCL_BUFFSIZE"), "8388608");
    EXPECT_EQ(value_of(launch.rank_exports, "NOT_MPI"), "<absent>");
}

// An option added after a `--` would be the program's: the place is before it.
TEST(ShellLaunch, TheLaunchersOptionsEndBeforeADoubleDash) {
    const auto argv = read_shell_launch({"mpirun", "-np", "2", "--", "./a", "-x", "X=1"}, {});
    ASSERT_TRUE(argv.mpi_place.has_value());
    EXPECT_EQ(argv.mpi_place->word, 3U);
    EXPECT_FALSE(argv.mpi_place->offset.has_value());
    EXPECT_EQ(value_of(argv.rank_exports, "X"), "<absent>");
    const std::string script = "mpirun -np 2 -- ./a";
    const auto in_sh = read_shell_launch({"sh", "-c", script}, {});
    ASSERT_TRUE(in_sh.mpi_place.has_value());
    EXPECT_EQ(in_sh.mpi_place->word, 2U);
    EXPECT_EQ(in_sh.mpi_place->offset, script.find(" --"));
}

// In an `sh -c` script, as in a batch script: no place after a backslash that
// would escape the added word into the one before, nor before an operator
// written without a blank that it would be glued to.
TEST(ShellLaunch, NoPlaceInTheScriptWhereAnAddedWordWouldJoinAnother) {
    for (const std::string script : {"mpirun -np 2 -\\", "mpirun -<<<<"}) {
        const auto launch = read_shell_launch({"sh", "-c", script}, {});
        EXPECT_FALSE(launch.mpi_place.has_value()) << script;
    }
    for (const std::string script : {"mpirun -np 2 ./a; true", "mpirun -np 2 ./a", "mpirun -np 2 ./a|tee log"}) {
        const auto launch = read_shell_launch({"sh", "-c", script}, {});
        ASSERT_TRUE(launch.mpi_place.has_value()) << script;
        EXPECT_EQ(launch.mpi_place->offset, script.find(" ./a")) << script;
    }
}

TEST(ShellLaunch, MpichGenvAndLineContinuations) {
    auto launch = read_shell_launch({"sh", "-c", "mpiexec -n 4 \\\n  -genv NCCL_NET IB \\\n  ./a.out"}, {});
    EXPECT_EQ(launch.mpi_ranks, 4);
    EXPECT_EQ(value_of(launch.rank_exports, "NCCL_NET"), "IB");
}

TEST(ShellLaunch, EveryLauncherNameAndItsEnvironmentOptions) {
    auto prterun =
        read_shell_launch({"prterun", "--np=8", "--mca", "btl", "^openib", "-x", "NCCL_DEBUG=INFO", "./a"}, {});
    EXPECT_EQ(prterun.mpi_ranks, 8);
    EXPECT_EQ(value_of(prterun.rank_exports, "NCCL_DEBUG"), "INFO");
    auto hydra = read_shell_launch(
        {"bash", "-c", "timeout 1h /opt/intel/mpi/bin/mpiexec.hydra -np 4 -env NCCL_NET IB -genvlist NCCL_DEBUG ./a"},
        {});
    EXPECT_EQ(hydra.mpi_ranks, 4);
    EXPECT_EQ(value_of(hydra.rank_exports, "NCCL_NET"), "IB");
    ASSERT_EQ(hydra.rank_exports.size(), 2U);
    EXPECT_TRUE(hydra.rank_exports[1].forwarded);
    // Options whose values look like programs do not end the options.
    auto orterun = read_shell_launch({"orterun", "-wdir", "/w", "--hostfile", "h", "-x", "A=1", "./a"}, {});
    EXPECT_EQ(value_of(orterun.rank_exports, "A"), "1");
}

TEST(ShellLaunch, HereDocumentBodiesAreDataNotCommands) {
    auto launch =
        read_shell_launch({"/bin/sh", "-c",
                           "cat >/scripts/run.sh <<EOF\n#!/bin/bash\nNCCL_LIB_DIR=\"${X}\" /scripts/run-mpi.sh\n"
                           "EOF\nexport NCCL_DEBUG=WARN\n"},
                          {});
    EXPECT_EQ(value_of(launch.exports, "NCCL_LIB_DIR"), "<absent>");
    EXPECT_EQ(value_of(launch.exports, "NCCL_DEBUG"), "WARN");
}

TEST(ShellLaunch, SimpleReferencesExpandFromTheEnvironment) {
    const Environment env{{"NCCL_IB_DISABLE", "0"}, {"HCA", "mlx5"}};
    EXPECT_EQ(expand_variables("${NCCL_IB_DISABLE}", env), "0");
    EXPECT_EQ(expand_variables("=${HCA}_0:${HCA}_1", env), "=mlx5_0:mlx5_1");
    EXPECT_FALSE(expand_variables("$HCA_0", env));  // HCA_0 is a name of its own, which the image may set
    EXPECT_FALSE(expand_variables("${NCCL_DEBUG}", env));
    EXPECT_FALSE(expand_variables("$(hostname)", env));
    EXPECT_FALSE(expand_variables("${X:-1}", env));
    EXPECT_FALSE(expand_variables("`id -u`", env));

    auto launch = read_shell_launch(
        {"bash", "-c", "N=4; export A=${HCA} B='$HCA' C=$N\nmpirun -x D=${HCA} -x E=\\$HCA -x F=\"\\$HCA$HCA\" prog"},
        {});
    ASSERT_EQ(launch.exports.size(), 3U);
    EXPECT_EQ(launch.exports[0].pattern, "${HCA}");
    EXPECT_EQ(launch.exports[1].value, "$HCA");  // single quotes: literal
    EXPECT_FALSE(launch.exports[2].pattern);     // N is the script's own variable
    ASSERT_EQ(launch.rank_exports.size(), 3U);
    EXPECT_EQ(launch.rank_exports[0].pattern, "${HCA}");
    EXPECT_EQ(launch.rank_exports[1].value, "$HCA");  // escaped: literal
    // A literal and an expanded '$' in one word: the text cannot tell them apart.
    EXPECT_FALSE(launch.rank_exports[2].value);
    EXPECT_FALSE(launch.rank_exports[2].pattern);
}

TEST(ShellLaunch, TorchrunShape) {
    auto launch = read_shell_launch(
        {"python", "-m", "torch.distributed.run", "--nnodes", "4", "--nproc_per_node=8", "train.py", "--nnodes", "9"},
        {});
    EXPECT_EQ(launch.torch_nnodes, 4);
    EXPECT_EQ(launch.torch_nproc_per_node, 8);
    auto elastic = read_shell_launch({"torchrun", "--nnodes=1:4", "train.py"}, {});
    EXPECT_FALSE(elastic.torch_nnodes);
}

TEST(Quantity, CpuAndMemory) {
    EXPECT_EQ(parse_millicores("500m"), 500);
    EXPECT_EQ(parse_millicores("2"), 2000);
    EXPECT_EQ(parse_millicores("0.25"), 250);
    EXPECT_EQ(parse_quantity_bytes("16Gi"), 17179869184LL);
    EXPECT_EQ(parse_quantity_bytes("1G"), 1000000000LL);
    EXPECT_EQ(parse_quantity_bytes("1e3"), 1000);
    EXPECT_EQ(parse_quantity_bytes("128974848"), 128974848);
    EXPECT_FALSE(parse_quantity_bytes("lots"));
    EXPECT_FALSE(parse_quantity_bytes("1Gb"));
    EXPECT_FALSE(parse_millicores(""));
}

}  // namespace
}  // namespace launchguard::kubernetes
