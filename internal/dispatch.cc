// Runtime kernel choice: the Context setting, else LOWBIT_KERNEL, else the best kernel the CPU
// supports. One binary, no -m flags needed by the caller.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "internal/context_state.h"
#include "internal/kernel.h"
#include "public/context.h"
#include "public/error.h"

namespace lowbit {

const char* KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kAuto:
      return "auto";
    case Kernel::kReference:
      return "reference";
  }
  return "unknown";
}

namespace {

constexpr Kernel kSelectableKernels[] = {Kernel::kReference};

Kernel KernelFromEnvironment(const char* value) {
  std::string names;
  for (Kernel kernel : kSelectableKernels) {
    if (value == std::string(KernelName(kernel))) return kernel;
    names += names.empty() ? "" : ", ";
    names += KernelName(kernel);
  }
  throw Error("LOWBIT_KERNEL", "must be one of: " + names + "; got '" + value + "'");
}

}  // namespace

std::vector<Kernel> AvailableKernels() { return {Kernel::kReference}; }

Kernel Context::ResolvedKernel() const {
  if (state_->kernel != Kernel::kAuto) return state_->kernel;
  const char* forced = std::getenv("LOWBIT_KERNEL");
  if (forced != nullptr && forced[0] != '\0') return KernelFromEnvironment(forced);
  return AvailableKernels().back();
}

namespace internal {

const KernelImplementation& GetKernelImplementation(Kernel kernel) {
  switch (kernel) {
    case Kernel::kReference:
      return ReferenceKernel();
    case Kernel::kAuto:
      break;
  }
  throw std::logic_error("GetKernelImplementation needs a resolved kernel");
}

}  // namespace internal
}  // namespace lowbit
