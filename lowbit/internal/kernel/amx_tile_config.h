// The AMX tile configuration the AMX kernel runs under, shared with its instruction ceilings in
// bench/ceiling_x86.cc so that they measure the same tile shapes.
#ifndef LOWBIT_INTERNAL_KERNEL_AMX_TILE_CONFIG_H_
#define LOWBIT_INTERNAL_KERNEL_AMX_TILE_CONFIG_H_

#include <cstdint>

namespace lowbit {
namespace internal {

// LDTILECFG's 64-byte operand, palette 1: each tile register's rows and bytes per row. The
// kernel takes one configuration, every tile 16 rows of 64 bytes, because LDTILECFG takes about
// 300 cycles (measured here: more than a 64-deep call's four tdpbsud): a short last panel
// multiplies whole tiles (its rows past the lhs are zeros) and copies out the rows asked for, and
// a depth tail goes through zero-padded copies.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// LDTILECFG through an operand of the whole configuration: GCC's _tile_loadconfig names only its
// first 8 bytes as read, which lets the compiler drop the stores of the rest.
inline void LoadTileConfig(const TileConfig& config) {
  asm volatile("ldtilecfg %0" : : "m"(config));
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_AMX_TILE_CONFIG_H_
