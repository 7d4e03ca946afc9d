#include "util/yaml_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace launchguard {
namespace {

// Each of these made yaml-cpp 0.7 loop and allocate without end.
TEST(YamlGuard, RefusesACommaAfterARootFlowCollection) {
    for (const std::string text : {"{a: b},\n", "[a],\n", "{a: b} ,\n", "{a: b}, c\n", "# c\n   {\"x\": 1},\n  ]\n",
                                   "kind: Pod\n---\n[1, [2, 3]],\n", "{a: \"}\"},\n", "{a: '}'''},\n"}) {
        auto status = check_yaml_flow_roots(text, "m.yaml");
        ASSERT_FALSE(status.ok()) << text;
        EXPECT_EQ(status.error().file, "m.yaml");
        EXPECT_NE(status.error().message.find("a ',' after the flow collection"), std::string::npos);
    }
    EXPECT_EQ(check_yaml_flow_roots("kind: Pod\n---\n\n{a: b},\n", "m.yaml").error().line, 4);
}

TEST(YamlGuard, PassesValidYamlIncludingCommasInsideFlowAndBlockScalars) {
    for (const std::string text : {
             "kind: Pod\nspec: {containers: [{name: a}, {name: b}]}\n",
             "{a: b, c: [1, 2]}\n",
             "[1, 2]\n---\n{a: 1}\n",
             "args:\n  - |\n    python -c 'print({1},)'\n    {a},\n",
             "x: \"{a},\"\n",
             "{a: b} # a comment, with a comma\n",
             "# {a},\nkind: Pod\n",
             "",
         }) {
        EXPECT_TRUE(check_yaml_flow_roots(text, "m.yaml").ok()) << text;
    }
}

}  // namespace
}  // namespace launchguard
