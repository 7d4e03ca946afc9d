// NCCL_IB_HCA / NCCL_SOCKET_IFNAME parsing and matching (parseStringList /
// matchIfList in NCCL's src/misc/utils.cc).
#include "nccl/device_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace launchguard::nccl {
namespace {

TEST(NcclDeviceFilter, PrefixMatchIsTheDefault) {
    DeviceFilter filter = parse_hca_filter("mlx5_1");
    EXPECT_FALSE(filter.exclude);
    EXPECT_FALSE(filter.exact);
    EXPECT_TRUE(matches(filter, "mlx5_1"));
    EXPECT_TRUE(matches(filter, "mlx5_10"));
    EXPECT_TRUE(matches(filter, "mlx5_17"));
    EXPECT_FALSE(matches(filter, "mlx5_2"));
}

TEST(NcclDeviceFilter, EqualsMeansExactNames) {
    DeviceFilter filter = parse_hca_filter("=mlx5_1");
    EXPECT_TRUE(filter.exact);
    EXPECT_TRUE(matches(filter, "mlx5_1"));
    EXPECT_FALSE(matches(filter, "mlx5_10"));
}

TEST(NcclDeviceFilter, CaretExcludes) {
    DeviceFilter filter = parse_hca_filter("^mlx5_0");
    EXPECT_TRUE(filter.exclude);
    EXPECT_FALSE(matches(filter, "mlx5_0"));
    EXPECT_TRUE(matches(filter, "mlx5_1"));
    EXPECT_FALSE(matches(filter, "mlx5_0", 1));
}

TEST(NcclDeviceFilter, CaretThenEqualsExcludesExactNames) {
    DeviceFilter filter = parse_hca_filter("^=mlx5_1");
    EXPECT_TRUE(filter.exclude);
    EXPECT_TRUE(filter.exact);
    EXPECT_FALSE(matches(filter, "mlx5_1"));
    EXPECT_TRUE(matches(filter, "mlx5_10"));
}

TEST(NcclDeviceFilter, EqualsThenCaretIsALiteralCaret) {
    // NCCL strips '^' first and '=' second, never the other way round.
    DeviceFilter filter = parse_hca_filter("=^mlx5_1");
    EXPECT_FALSE(filter.exclude);
    EXPECT_TRUE(filter.exact);
    ASSERT_EQ(filter.entries.size(), 1U);
    EXPECT_EQ(filter.entries[0].name, "^mlx5_1");
    EXPECT_FALSE(matches(filter, "mlx5_1"));
}

TEST(NcclDeviceFilter, PortSelectsOnePort) {
    DeviceFilter filter = parse_hca_filter("mlx5_0:1,mlx5_1");
    ASSERT_EQ(filter.entries.size(), 2U);
    EXPECT_EQ(filter.entries[0].name, "mlx5_0");
    EXPECT_EQ(filter.entries[0].port, 1);
    EXPECT_EQ(filter.entries[1].port, -1);
    EXPECT_TRUE(matches(filter, "mlx5_0", 1));
    EXPECT_FALSE(matches(filter, "mlx5_0", 2));
    EXPECT_TRUE(matches(filter, "mlx5_0"));  // any port asked
    EXPECT_TRUE(matches(filter, "mlx5_1", 2));
}

TEST(NcclDeviceFilter, RailAndPlaneFieldsAreParsed) {
    DeviceFilter filter = parse_hca_filter("mlx5_0:1:3:0,mlx5_1::2");
    ASSERT_EQ(filter.entries.size(), 2U);
    EXPECT_EQ(filter.entries[0].rail, 3);
    EXPECT_EQ(filter.entries[0].plane, 0);
    EXPECT_EQ(filter.entries[1].port, -1);
    EXPECT_EQ(filter.entries[1].rail, 2);
}

TEST(NcclDeviceFilter, QuotesAreLiteralAndMatchNothing) {
    DeviceFilter filter = parse_hca_filter("\"mlx5_0\"");
    EXPECT_EQ(filter.text, "\"mlx5_0\"");
    ASSERT_EQ(filter.entries.size(), 1U);
    EXPECT_EQ(filter.entries[0].name, "\"mlx5_0\"");
    EXPECT_FALSE(matches(filter, "mlx5_0"));
    EXPECT_FALSE(matches(filter, "mlx5_0", 1));

    DeviceFilter list = parse_hca_filter("\"mlx5_0,mlx5_1\"");
    EXPECT_FALSE(matches(list, "mlx5_0"));
    EXPECT_FALSE(matches(list, "mlx5_1"));  // the entry is `mlx5_1"`

    DeviceFilter quoted_exclude = parse_hca_filter("\"^mlx5_0\"");
    EXPECT_FALSE(quoted_exclude.exclude);
    EXPECT_FALSE(matches(quoted_exclude, "mlx5_1"));
}

TEST(NcclDeviceFilter, EmptyEntriesVanishAndEmptyListSelectsEverything) {
    DeviceFilter filter = parse_hca_filter(",,mlx5_2,,");
    ASSERT_EQ(filter.entries.size(), 1U);
    EXPECT_TRUE(matches(filter, "mlx5_2"));

    EXPECT_TRUE(matches(parse_hca_filter(""), "mlx5_0"));
    // "^" alone inverts "select everything": no device is left.
    EXPECT_FALSE(matches(parse_hca_filter("^"), "mlx5_0"));
}

TEST(NcclDeviceFilter, SpacesAreLiteral) {
    DeviceFilter filter = parse_hca_filter("mlx5_0, mlx5_1");
    EXPECT_TRUE(matches(filter, "mlx5_0"));
    EXPECT_FALSE(matches(filter, "mlx5_1"));
}

TEST(NcclDeviceFilter, AtMost32HcaEntries) {
    std::string text;
    for (int i = 0; i < 40; ++i) text += (i ? "," : "") + std::string("mlx5_") + std::to_string(i);
    DeviceFilter filter = parse_hca_filter(text);
    EXPECT_EQ(filter.entries.size(), 32U);
    EXPECT_FALSE(matches(parse_hca_filter("=" + text), "mlx5_35"));
}

TEST(NcclDeviceFilter, IfnameOfLengthOneOrLessIsIgnored) {
    EXPECT_TRUE(parse_ifname_filter("").ignored);
    EXPECT_TRUE(parse_ifname_filter("e").ignored);
    EXPECT_TRUE(parse_ifname_filter("^").ignored);
    EXPECT_TRUE(matches(parse_ifname_filter("^"), "eth0"));
    EXPECT_FALSE(parse_ifname_filter("ib").ignored);
}

TEST(NcclDeviceFilter, IfnameUsesTheSameMatching) {
    DeviceFilter filter = parse_ifname_filter("eth");
    EXPECT_TRUE(matches(filter, "eth0"));
    EXPECT_FALSE(matches(filter, "ib0"));

    DeviceFilter exclude = parse_ifname_filter("^docker,lo");
    EXPECT_FALSE(matches(exclude, "docker0"));
    EXPECT_FALSE(matches(exclude, "lo"));
    EXPECT_TRUE(matches(exclude, "eth0"));

    DeviceFilter exact = parse_ifname_filter("=eth0");
    EXPECT_TRUE(matches(exact, "eth0"));
    EXPECT_FALSE(matches(exact, "eth0.100"));

    DeviceFilter quoted = parse_ifname_filter("\"eth0\"");
    EXPECT_FALSE(quoted.ignored);
    EXPECT_FALSE(matches(quoted, "eth0"));
}

TEST(NcclDeviceFilter, IfnamePortSuffixIsDroppedForInterfaces) {
    // Interfaces are matched with port -1, so "eth0:1" behaves like "eth0".
    DeviceFilter filter = parse_ifname_filter("eth0:1");
    EXPECT_TRUE(matches(filter, "eth0"));
}

TEST(NcclDeviceFilter, AtMost16IfnameEntries) {
    std::string text;
    for (int i = 0; i < 20; ++i) text += (i ? "," : "") + std::string("eth") + std::to_string(i);
    EXPECT_EQ(parse_ifname_filter(text).entries.size(), 16U);
}

}  // namespace
}  // namespace launchguard::nccl
