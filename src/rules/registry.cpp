// The one list of every rule launchguard knows.
#include "rules/families.h"

namespace launchguard {

const std::vector<const Rule*>& all_rules() {
    static const std::vector<const Rule*> rules = [] {
        std::vector<const Rule*> list;
        register_topology_rules(list);
        register_conf_rules(list);
        register_network_rules(list);
        register_nccl_tuning_rules(list);
        register_cpu_placement_rules(list);
        register_power_rules(list);
        register_virtualization_rules(list);
        register_hardware_rules(list);
        register_container_rules(list);
        register_nccl_path_rules(list);
        return list;
    }();
    return rules;
}

}  // namespace launchguard
