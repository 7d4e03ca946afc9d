#include "probe/gpu_assignment.h"

#include <gtest/gtest.h>

#include "probe/hwloc_probe.h"
#include "support/shared_fixtures.h"

namespace launchguard {
namespace {

class GpuAssignmentTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto loaded = load_topology_from_xml(testing::shared_fixture_path("hwloc/nvidiaDGX2.xml"));
        ASSERT_TRUE(loaded.ok());
        topo = Fact<NodeTopology>::known(*loaded, "dgx2");
    }
    static std::vector<int> indices(const Fact<std::vector<Gpu>>& gpus) {
        std::vector<int> out;
        for (const auto& g : gpus.value()) out.push_back(g.index);
        return out;
    }
    Fact<NodeTopology> topo;
};

TEST_F(GpuAssignmentTest, FlagBeatsEveryVariable) {
    Environment env{{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0"}};
    auto gpus = assigned_gpus(env, std::string("5"), topo);
    ASSERT_TRUE(gpus.is_known()) << gpus.reason();
    EXPECT_EQ(indices(gpus), std::vector<int>{5});
    EXPECT_EQ(gpus.source(), "--gpus=5");
}

TEST_F(GpuAssignmentTest, SlurmStepGpusBeatsRenumberedCudaVisibleDevices) {
    Environment env{{"SLURM_STEP_GPUS", "8,9"}, {"NVIDIA_VISIBLE_DEVICES", "all"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
    auto gpus = assigned_gpus(env, std::nullopt, topo);
    ASSERT_TRUE(gpus.is_known());
    EXPECT_EQ(indices(gpus), (std::vector<int>{8, 9}));
    EXPECT_EQ(gpus.value()[0].busid, "0000:b7:00.0");
    EXPECT_EQ(gpus.value()[0].numa_node, 1);
}

TEST_F(GpuAssignmentTest, NvidiaVisibleDevicesAllNoneAndUuids) {
    auto all = assigned_gpus({{"NVIDIA_VISIBLE_DEVICES", "all"}, {"CUDA_VISIBLE_DEVICES", "3"}}, std::nullopt, topo);
    EXPECT_EQ(all->size(), 16U);
    for (const char* none : {"none", "void", ""}) {
        auto gpus = assigned_gpus({{"NVIDIA_VISIBLE_DEVICES", none}}, std::nullopt, topo);
        ASSERT_TRUE(gpus.is_known());
        EXPECT_TRUE(gpus->empty());
    }
    // A unique UUID prefix is enough, as in CUDA.
    auto by_uuid = assigned_gpus({{"NVIDIA_VISIBLE_DEVICES", "GPU-d3977428"}}, std::nullopt, topo);
    ASSERT_TRUE(by_uuid.is_known()) << by_uuid.reason();
    EXPECT_EQ(indices(by_uuid), std::vector<int>{0});
}

TEST_F(GpuAssignmentTest, CudaVisibleDevicesSourceWarnsAboutRenumbering) {
    auto gpus = assigned_gpus({{"CUDA_VISIBLE_DEVICES", "0000:3B:00.0, 1"}}, std::nullopt, topo);
    ASSERT_TRUE(gpus.is_known()) << gpus.reason();
    EXPECT_EQ(indices(gpus), (std::vector<int>{3, 1}));
    EXPECT_NE(gpus.source().find("renumbered"), std::string::npos);
}

TEST_F(GpuAssignmentTest, NoVariableMeansEveryGpu) {
    auto gpus = assigned_gpus({}, std::nullopt, topo);
    ASSERT_TRUE(gpus.is_known());
    EXPECT_EQ(gpus->size(), 16U);
    EXPECT_EQ(gpus.source(), "no restriction: every GPU on the node is visible");
}

TEST_F(GpuAssignmentTest, UnknownIdsSayWhichAndWhere) {
    auto index = assigned_gpus({{"SLURM_STEP_GPUS", "3,16"}}, std::nullopt, topo);
    EXPECT_FALSE(index.is_known());
    EXPECT_NE(index.reason().find("SLURM_STEP_GPUS"), std::string::npos);
    EXPECT_NE(index.reason().find("16"), std::string::npos);
    EXPECT_FALSE(assigned_gpus({{"CUDA_VISIBLE_DEVICES", "GPU-ffffffff"}}, std::nullopt, topo).is_known());
    EXPECT_FALSE(assigned_gpus({{"CUDA_VISIBLE_DEVICES", "0000:99:00.0"}}, std::nullopt, topo).is_known());
    EXPECT_FALSE(assigned_gpus({{"CUDA_VISIBLE_DEVICES", "gpu0"}}, std::nullopt, topo).is_known());
    EXPECT_FALSE(assigned_gpus({{"CUDA_VISIBLE_DEVICES", "MIG-1234"}}, std::nullopt, topo).is_known());
}

TEST_F(GpuAssignmentTest, UnknownTopologyMakesGpusUnknownExceptNone) {
    auto unknown_topo = Fact<NodeTopology>::unknown("no hwloc XML");
    auto gpus = assigned_gpus({{"CUDA_VISIBLE_DEVICES", "0"}}, std::nullopt, unknown_topo);
    EXPECT_FALSE(gpus.is_known());
    EXPECT_NE(gpus.reason().find("no hwloc XML"), std::string::npos);
    EXPECT_FALSE(assigned_gpus({}, std::nullopt, unknown_topo).is_known());
    EXPECT_TRUE(assigned_gpus({{"CUDA_VISIBLE_DEVICES", ""}}, std::nullopt, unknown_topo).is_known());
}

}  // namespace
}  // namespace launchguard
