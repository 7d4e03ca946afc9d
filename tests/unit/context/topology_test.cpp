#include "context/topology.h"

#include <gtest/gtest.h>

namespace launchguard {
namespace {

TEST(TopologyTest, LooksUpGpusByIndexBusIdAndUuid) {
    NodeTopology topo;
    Gpu a;
    a.index = 0;
    a.busid = "0000:3b:00.0";
    a.uuid = "GPU-aaaa";
    Gpu b;
    b.index = 1;
    b.busid = "0000:86:00.0";
    topo.gpus = {a, b};
    EXPECT_EQ(topo.gpu_by_index(1), &topo.gpus[1]);
    EXPECT_EQ(topo.gpu_by_index(2), nullptr);
    EXPECT_EQ(topo.gpu_by_busid("0000:3B:00.0"), &topo.gpus[0]);
    EXPECT_EQ(topo.gpu_by_busid("00000000:86:00.0"), &topo.gpus[1]);  // nvidia-smi's form
    EXPECT_EQ(topo.gpu_by_uuid("GPU-aaaa"), &topo.gpus[0]);
    EXPECT_EQ(topo.gpu_by_uuid(""), nullptr);
}

TEST(TopologyTest, CountsActiveIbPorts) {
    NodeTopology topo;
    Nic nic;
    nic.ports = {IbPort{1, "ACTIVE", "LinkUp", 400.0, "InfiniBand"}, IbPort{2, "DOWN", "Disabled", std::nullopt, ""}};
    topo.nics = {nic, nic};
    EXPECT_EQ(topo.active_ib_port_count(), 2U);
}

TEST(CpuSetProbeTest, ParsesTaskMasks) {
    auto list = CpuSet::parse_list("0-3,8,10-11\n");
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->count(), 7U);
    EXPECT_EQ(list->to_list(), "0-3,8,10-11");
    auto mask = CpuSet::parse_mask("0x0000000f,0x00000001");
    ASSERT_TRUE(mask.ok());
    EXPECT_EQ(mask->to_list(), "0,32-35");
    EXPECT_FALSE(CpuSet::parse_list("3-1").ok());
    EXPECT_FALSE(CpuSet::parse_list("0-3,x").ok());
}

}  // namespace
}  // namespace launchguard
