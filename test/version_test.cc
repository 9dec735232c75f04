// The version agrees everywhere it is stated: the header's macros, the library's lowbit::Version()
// and the CMake project's version (read from the header by CMakeLists.txt).
#include <gtest/gtest.h>

#include <string>

#include "lowbit/lowbit.h"

namespace {

TEST(VersionTest, HeaderLibraryAndPackageAgree) {
  const std::string from_macros = std::to_string(LOWBIT_VERSION_MAJOR) + "." +
                                  std::to_string(LOWBIT_VERSION_MINOR) + "." +
                                  std::to_string(LOWBIT_VERSION_PATCH);
  EXPECT_EQ(lowbit::Version(), from_macros);
  EXPECT_EQ(lowbit::Version(), std::string(LOWBIT_PROJECT_VERSION));
  EXPECT_EQ(LOWBIT_VERSION,
            LOWBIT_VERSION_MAJOR * 10000 + LOWBIT_VERSION_MINOR * 100 + LOWBIT_VERSION_PATCH);
}

}  // namespace
