// Public fixtures (real files from other projects: NCCL topology files, hwloc
// exports, manifests, batch scripts) are not copied into the repository. The
// tests read them from LAUNCHGUARD_SHARED_FIXTURES, a CMake cache variable, and
// skip by name when that folder is missing. tests/fixtures/README.md lists
// which files are read from there.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace launchguard::testing {

// The folder, as configured (only shared_fixtures.cpp is compiled with it, so
// moving it recompiles one file).
const std::string& shared_fixtures_root();
bool shared_fixtures_present();

// Called from a running test without the public fixtures: records the test as
// skipped, "needs the public fixtures: LAUNCHGUARD_SHARED_FIXTURES not found",
// and ends it with testing::AssertionException, which GoogleTest takes as a
// result already reported. Does nothing outside a test (static initialisers).
void skip_test_without_shared_fixtures();

// Absolute path of a public fixture, e.g. "nccl-topo/ndv5-topo.xml"; a running
// test without them is skipped here, where it asks for one.
std::string shared_fixture_path(const std::string& relative);

// A container root with Azure's /etc/nccl.conf and the topology file it names
// (the real ndv5-topo.xml at /opt/microsoft/ndv5-topo.xml, reached through the
// ndv5/topo.xml symlink Azure images carry), assembled once per process in a
// temporary directory from tests/fixtures/cli/rootfs-topo-missing and the public
// file. Skips a test without the public fixtures.
std::string rootfs_with_ndv5_topology();

}  // namespace launchguard::testing
