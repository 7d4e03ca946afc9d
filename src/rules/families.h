// One registration function per family of rules; rules/registry.cpp calls
// them in catalog order (docs/design/RULES.md).
#pragma once

#include <vector>

#include "rules/rule.h"

namespace launchguard {

void register_topology_rules(std::vector<const Rule*>& rules);        // topo.*
void register_conf_rules(std::vector<const Rule*>& rules);            // conf.*
void register_network_rules(std::vector<const Rule*>& rules);         // net.*
void register_nccl_tuning_rules(std::vector<const Rule*>& rules);     // nccl.*
void register_cpu_placement_rules(std::vector<const Rule*>& rules);   // cpu.*
void register_power_rules(std::vector<const Rule*>& rules);           // power.*, numa.*
void register_virtualization_rules(std::vector<const Rule*>& rules);  // virt.*
void register_hardware_rules(std::vector<const Rule*>& rules);        // hw.*
void register_container_rules(std::vector<const Rule*>& rules);       // shm.*, mem.*
void register_nccl_path_rules(std::vector<const Rule*>& rules);       // NCCL's predicted paths

}  // namespace launchguard
