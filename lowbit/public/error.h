// The one error type lowbit throws: every rejected call names the argument and the rule it broke,
// and is thrown before any result memory is written.
#ifndef LOWBIT_PUBLIC_ERROR_H_
#define LOWBIT_PUBLIC_ERROR_H_

#include <stdexcept>
#include <string>

namespace lowbit {

class Error : public std::invalid_argument {
 public:
  Error(std::string argument, const std::string& rule)
      : std::invalid_argument("lowbit: " + argument + ": " + rule),
        argument_(std::move(argument)) {}

  /// The name of the offending argument, e.g. "lhs", "rhs_offset" or "pipeline[2].result_shift".
  const std::string& argument() const { return argument_; }

 private:
  std::string argument_;
};

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_ERROR_H_
