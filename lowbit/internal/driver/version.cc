// The library's version string, built from the version macros this library was compiled with.
#include "lowbit/public/version.h"

#define LOWBIT_STRINGIFY_NUMBER(x) #x
#define LOWBIT_VERSION_PART(x) LOWBIT_STRINGIFY_NUMBER(x)

namespace lowbit {

const char* Version() {
  return LOWBIT_VERSION_PART(LOWBIT_VERSION_MAJOR) "." LOWBIT_VERSION_PART(
      LOWBIT_VERSION_MINOR) "." LOWBIT_VERSION_PART(LOWBIT_VERSION_PATCH);
}

}  // namespace lowbit
