// lowbit's version: the headers' as macros (compile time) and the linked library's as
// lowbit::Version() (run time), so that a program can check it runs the library it was built for.
// CMakeLists.txt reads the version from this file: change it here only.
#ifndef LOWBIT_PUBLIC_VERSION_H_
#define LOWBIT_PUBLIC_VERSION_H_

#define LOWBIT_VERSION_MAJOR 0
#define LOWBIT_VERSION_MINOR 1
#define LOWBIT_VERSION_PATCH 0
// One number that orders versions: 10000 * major + 100 * minor + patch.
#define LOWBIT_VERSION \
  (LOWBIT_VERSION_MAJOR * 10000 + LOWBIT_VERSION_MINOR * 100 + LOWBIT_VERSION_PATCH)

namespace lowbit {

/// The linked library's version as "major.minor.patch". Programs built against other headers than
/// the library they load can compare it with the LOWBIT_VERSION_* macros.
const char* Version();

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_VERSION_H_
