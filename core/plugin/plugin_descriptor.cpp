#include "core/plugin/plugin_descriptor.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/error.h"
#include "core/plugin/plugin_types.h"

namespace drift {
namespace {

// The fixed head every 1.x descriptor has: struct_size .. kinds, then create and destroy.
constexpr size_t kMinimumSize = offsetof(drift_plugin_t, destroy) + sizeof(drift_plugin_t::destroy);
constexpr drift_kinds_t kKnownKinds =
    DRIFT_KIND_DRAFT_PROVIDER | DRIFT_KIND_VERIFICATION_POLICY | DRIFT_KIND_CACHE_MANAGER;

}  // namespace

const char* missing_required_hook(const drift_plugin_t& d) {
  if (!d.create) return "create";
  if (!d.destroy) return "destroy";
  if ((d.kinds & DRIFT_KIND_DRAFT_PROVIDER) && !d.on_propose) return "on_propose";
  if ((d.kinds & DRIFT_KIND_VERIFICATION_POLICY) && !d.on_choose_kv_view) return "on_choose_kv_view";
  if (d.kinds & DRIFT_KIND_CACHE_MANAGER) {
    if (!d.on_prefix_match) return "on_prefix_match";
    if (!d.on_pages_full) return "on_pages_full";
    if (!d.on_evict) return "on_evict";
  }
  return nullptr;
}

drift_plugin_t adopt_descriptor(const drift_plugin_t* raw, const std::string& where) {
  if (!raw)
    fail("{}: {}() returned no descriptor (the plugin refused host ABI {}.{})", where,
         DRIFT_PLUGIN_ENTRY_POINT, DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR);
  // struct_size, abi_major and abi_minor sit at the same offsets in every version.
  if (raw->abi_major != DRIFT_ABI_MAJOR)
    fail("{}: plugin ABI {}.{} is incompatible with the host's ABI {}.{} (major {} != {})", where,
         raw->abi_major, raw->abi_minor, DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, raw->abi_major,
         DRIFT_ABI_MAJOR);
  if (raw->struct_size < kMinimumSize)
    fail("{}: descriptor struct_size {} is smaller than the ABI {} minimum of {} bytes", where,
         raw->struct_size, DRIFT_ABI_MAJOR, kMinimumSize);

  drift_plugin_t desc{};
  std::memcpy(&desc, raw, std::min<size_t>(raw->struct_size, sizeof(desc)));
  desc.struct_size = sizeof(desc);  // the copy is complete in this host's layout
  desc.kinds &= kKnownKinds;        // a kind added by a newer minor is not ours to call

  if (!desc.name || !*desc.name) fail("{}: descriptor has no name", where);
  if (!desc.version) fail("{}: plugin '{}' has no version string", where, desc.name);
  if (const char* hook = missing_required_hook(desc))
    fail("{}: plugin '{}' ({}) lacks required hook {}", where, desc.name, kinds_string(desc.kinds),
         hook);
  return desc;
}

std::string kinds_string(drift_kinds_t kinds) {
  std::string out;
  auto add = [&](drift_kinds_t bit, const char* name) {
    if (!(kinds & bit)) return;
    if (!out.empty()) out += ',';
    out += name;
  };
  add(DRIFT_KIND_DRAFT_PROVIDER, "draft_provider");
  add(DRIFT_KIND_VERIFICATION_POLICY, "verification_policy");
  add(DRIFT_KIND_CACHE_MANAGER, "cache_manager");
  return out.empty() ? "none" : out;
}

}  // namespace drift
