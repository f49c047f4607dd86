#pragma once
#include <cstdint>
#include <string>
#include <vector>

// What a TorchScript file holds, for tools that only show it (the studio's
// job designer): no torch headers here, so including this costs nothing;
// the definitions live in pw_runtime (torchscript_model.cpp).
namespace pw::rt {

// One top-level child of a scripted module = one pipeline layer.
struct TorchScriptChild {
  std::string name;    // attribute name in the parent ("0", "encoder", ...)
  std::string type;    // class name without its TorchScript prefix ("Linear")
  std::int64_t params = 0;  // number of parameter elements (recursive)
};

// The children of the module in `path`, in the order forward calls them.
// Throws std::runtime_error when the file cannot be loaded, or when the
// module is not a chain of its children (the message names the child or
// the operation that breaks the chain and how to fix it).
std::vector<TorchScriptChild> torchscript_children(const std::string& path);

}  // namespace pw::rt
