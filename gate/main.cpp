// launchguard-gate: the launch gate as one static executable, which an init
// container copies into any GPU container (gate/gate.h in src/ has the logic).
#include "gate/gate.h"

int main(int argc, char** argv) { return launchguard::gate_main(argc, argv); }
