/* GELU, tanh approximation, in the operation order of kernels.gelu_tanh. */
#include "bench.h"

void gelu_tanh(const float *restrict x, float *restrict out, int64_t n) {
    const float a = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = 0.5f * v * (1.0f + tanhf(a * (v + 0.044715f * (v * v * v))));
    }
}
