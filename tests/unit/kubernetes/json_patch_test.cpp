// The JSON Patch builder: operations the API server applies to the object it
// sent, missing parents created by a whole-value add, nothing duplicated.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "kubernetes/json_patch.h"
#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {
namespace {

namespace json = boost::json;

json::value bare_pod() {
    return json::parse(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"c","image":"i"}]}})");
}

TEST(JsonPointer, EscapesTildeBeforeSlash) {
    EXPECT_EQ(escape_pointer_token("nvidia.com/gpu"), "nvidia.com~1gpu");
    EXPECT_EQ(escape_pointer_token("a~/b"), "a~0~1b");
    auto patched = apply_json_patch(json::parse(R"({"a/b":{"c~d":1}})"),
                                    json::parse(R"([{"op":"replace","path":"/a~1b/c~0d","value":2}])").as_array());
    ASSERT_TRUE(patched);
    EXPECT_EQ(*patched, json::parse(R"({"a/b":{"c~d":2}})"));
}

TEST(JsonPatchApply, RefusesWhatTheApiServerRefuses) {
    const json::value pod = bare_pod();
    // Appending to an env list that does not exist fails on the API server too.
    auto missing_parent =
        apply_json_patch(pod, json::parse(R"([{"op":"add","path":"/spec/containers/0/env/-","value":{}}])").as_array());
    ASSERT_FALSE(missing_parent);
    EXPECT_EQ(missing_parent.error().field, "patch[0]");
    EXPECT_FALSE(
        apply_json_patch(pod, json::parse(R"([{"op":"replace","path":"/spec/hostIPC","value":true}])").as_array()));
    EXPECT_FALSE(apply_json_patch(pod, json::parse(R"([{"op":"remove","path":"/spec/containers/1"}])").as_array()));
    EXPECT_FALSE(apply_json_patch(pod, json::parse(R"([{"op":"add","path":"spec","value":1}])").as_array()));
    EXPECT_FALSE(apply_json_patch(pod, json::parse(R"([{"op":"move","from":"/spec","path":"/x"}])").as_array()));
}

TEST(PodPatchBuilder, CreatesMissingArraysThenAppends) {
    PodPatchBuilder builder(bare_pod());
    builder.set_env("/spec/containers/0", "NCCL_NET", "IB");
    builder.set_env("/spec/containers/0", "NCCL_IB_QPS_PER_CONNECTION", "4");
    builder.add_capability("/spec/containers/0", "CAP_IPC_LOCK");
    builder.memory_shm("/spec", "/spec/containers/0", 1ULL << 30);
    const json::value expected = json::parse(R"([
      {"op":"add","path":"/spec/containers/0/env","value":[{"name":"NCCL_NET","value":"IB"}]},
      {"op":"add","path":"/spec/containers/0/env/-","value":{"name":"NCCL_IB_QPS_PER_CONNECTION","value":"4"}},
      {"op":"add","path":"/spec/containers/0/securityContext","value":{}},
      {"op":"add","path":"/spec/containers/0/securityContext/capabilities","value":{}},
      {"op":"add","path":"/spec/containers/0/securityContext/capabilities/add","value":["IPC_LOCK"]},
      {"op":"add","path":"/spec/volumes","value":[{"name":"launchguard-dshm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}]},
      {"op":"add","path":"/spec/containers/0/volumeMounts","value":[{"name":"launchguard-dshm","mountPath":"/dev/shm"}]}
    ])");
    EXPECT_EQ(json::value(builder.patch()), expected) << json::serialize(builder.patch());
    auto applied = apply_json_patch(bare_pod(), builder.patch());
    ASSERT_TRUE(applied);
    EXPECT_EQ(*applied, builder.patched());
}

TEST(PodPatchBuilder, NeverDuplicatesAVariableVolumeMountOrCapability) {
    json::value pod = json::parse(R"({"spec":{"containers":[{"name":"c",
        "env":[{"name":"NCCL_NET","value":"Socket"},{"name":"TOKEN","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],
        "securityContext":{"capabilities":{"add":["IPC_LOCK"]}},
        "volumeMounts":[{"name":"topo","mountPath":"/opt/microsoft/ndv5-topo.xml"}]}],
      "volumes":[{"name":"topo","hostPath":{"path":"/opt/microsoft/ndv5-topo.xml"}},
                 {"name":"launchguard-dshm","emptyDir":{}}]}})");
    PodPatchBuilder builder(pod);
    builder.set_env("/spec/containers/0", "NCCL_NET", "IB");
    builder.set_env("/spec/containers/0", "NCCL_NET", "IB");
    builder.set_env("/spec/containers/0", "TOKEN", "x");
    builder.add_capability("/spec/containers/0", "IPC_LOCK");
    builder.mount_host_file("/spec", "/spec/containers/0", "/opt/microsoft/ndv5-topo.xml",
                            "/opt/microsoft/ndv5-topo.xml");
    builder.memory_shm("/spec", "/spec/containers/0", 1ULL << 30);
    const json::value expected = json::parse(R"([
      {"op":"replace","path":"/spec/containers/0/env/0/value","value":"IB"},
      {"op":"replace","path":"/spec/containers/0/env/1","value":{"name":"TOKEN","value":"x"}},
      {"op":"add","path":"/spec/volumes/-","value":{"name":"launchguard-dshm-2","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}},
      {"op":"add","path":"/spec/containers/0/volumeMounts/-","value":{"name":"launchguard-dshm-2","mountPath":"/dev/shm"}}
    ])");
    EXPECT_EQ(json::value(builder.patch()), expected) << json::serialize(builder.patch());
}

TEST(PodPatchBuilder, GrowsAnExistingShmVolumeAndUnsetsEveryEntryOfAName) {
    json::value pod = json::parse(R"({"spec":{"containers":[{"name":"c",
        "env":[{"name":"NCCL_ALGO","value":"Ring"},{"name":"A","value":"1"},{"name":"NCCL_ALGO","value":"Tree"}],
        "volumeMounts":[{"name":"dshm","mountPath":"/dev/shm"}]}],
      "volumes":[{"name":"dshm","emptyDir":{"medium":"Memory","sizeLimit":"64Mi"}}]}})");
    PodPatchBuilder builder(pod);
    builder.unset_env("/spec/containers/0", "NCCL_ALGO");
    builder.memory_shm("/spec", "/spec/containers/0", 1ULL << 30);
    const json::value expected = json::parse(R"([
      {"op":"remove","path":"/spec/containers/0/env/2"},
      {"op":"remove","path":"/spec/containers/0/env/0"},
      {"op":"replace","path":"/spec/volumes/0/emptyDir/sizeLimit","value":"1Gi"}
    ])");
    EXPECT_EQ(json::value(builder.patch()), expected) << json::serialize(builder.patch());
}

TEST(PodPatchBuilder, TwoContainersShareOneShmVolume) {
    PodPatchBuilder builder(json::parse(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})"));
    builder.memory_shm("/spec", "/spec/containers/0", 1ULL << 30);
    builder.memory_shm("/spec", "/spec/containers/1", 1ULL << 30);
    const json::value expected = json::parse(R"({"spec":{"containers":[
      {"name":"a","volumeMounts":[{"name":"launchguard-dshm","mountPath":"/dev/shm"}]},
      {"name":"b","volumeMounts":[{"name":"launchguard-dshm","mountPath":"/dev/shm"}]}],
      "volumes":[{"name":"launchguard-dshm","emptyDir":{"medium":"Memory","sizeLimit":"1Gi"}}]}})");
    EXPECT_EQ(builder.patched(), expected) << json::serialize(builder.patched());
}

TEST(Quantity, BytesForKubernetes) {
    EXPECT_EQ(quantity_for_bytes(1ULL << 30), "1Gi");
    EXPECT_EQ(quantity_for_bytes(3ULL << 29), "1536Mi");
    EXPECT_EQ(quantity_for_bytes(1000), "1000");
}

TEST(JsonPatchApply, PointersAreReadAsRfc6901Says) {
    const json::value doc = json::parse(R"({"a":[10,20],"m~/":{"k":1}})");
    auto apply = [&](const char* patch) { return apply_json_patch(doc, json::parse(patch).as_array()); };
    auto why = [&](const char* patch) {
        auto result = apply(patch);
        return result ? std::string("applied") : result.error().message;
    };
    // An escape other than ~0 and ~1, in the parent or in the last token.
    EXPECT_NE(why(R"([{"op":"add","path":"/m~2/k","value":1}])").find("not a JSON Pointer"), std::string::npos);
    EXPECT_NE(why(R"([{"op":"add","path":"/m~0~1/k~","value":1}])").find("not a JSON Pointer"), std::string::npos);
    // Array indices: no leading zero, no '-' but as the last token of add.
    EXPECT_NE(why(R"([{"op":"replace","path":"/a/01","value":1}])").find("no such array element"), std::string::npos);
    EXPECT_NE(why(R"([{"op":"add","path":"/a/-/x","value":1}])").find("the parent does not exist"), std::string::npos);
    auto appended = apply(R"([{"op":"add","path":"/a/-","value":30},{"op":"replace","path":"/m~0~1/k","value":2}])");
    ASSERT_TRUE(appended);
    EXPECT_EQ(*appended, json::parse(R"({"a":[10,20,30],"m~/":{"k":2}})"));
    auto whole = apply(R"([{"op":"replace","path":"","value":{"x":1}}])");
    ASSERT_TRUE(whole);
    EXPECT_EQ(*whole, json::parse(R"({"x":1})"));
}

}  // namespace
}  // namespace launchguard::kubernetes
