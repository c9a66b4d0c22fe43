/* relu: out = max(x, 0) */
#include "bench.h"

void relu(const float *restrict x, float *restrict out, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
