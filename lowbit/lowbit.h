// Everything a lowbit user includes: maps, context, output stages, bit depths, the GEMM entry
// points, and the quantization toolkit (parameters, multipliers, the quantized add and its stage,
// the quantized GEMM and fully-connected layer), and the version.
#ifndef LOWBIT_LOWBIT_H_
#define LOWBIT_LOWBIT_H_

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/public/bit_depth.h"
#include "lowbit/public/context.h"
#include "lowbit/public/error.h"
#include "lowbit/public/gemm.h"
#include "lowbit/public/map.h"
#include "lowbit/public/output_stages.h"
#include "lowbit/public/prepacked.h"
#include "lowbit/public/quantization.h"
#include "lowbit/public/quantized_add.h"
#include "lowbit/public/quantized_gemm.h"
#include "lowbit/public/version.h"

#endif  // LOWBIT_LOWBIT_H_
