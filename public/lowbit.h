// Everything a lowbit user includes: maps, context, output stages, bit depths, the GEMM entry
// points, and the quantization toolkit (parameters, multipliers, the quantized add and its stage,
// the quantized GEMM and fully-connected layer).
#ifndef LOWBIT_PUBLIC_LOWBIT_H_
#define LOWBIT_PUBLIC_LOWBIT_H_

#include "fixedpoint/fixedpoint.h"
#include "public/bit_depth.h"
#include "public/context.h"
#include "public/error.h"
#include "public/gemm.h"
#include "public/map.h"
#include "public/output_stages.h"
#include "public/prepacked.h"
#include "public/quantization.h"
#include "public/quantized_add.h"
#include "public/quantized_gemm.h"

#endif  // LOWBIT_PUBLIC_LOWBIT_H_
