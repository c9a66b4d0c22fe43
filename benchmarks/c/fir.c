/* A FIR filter (correlation, "valid"), written as the scalar-accumulator formulation. */
#include "bench.h"

void fir(const float *restrict x, const float *restrict w, float *restrict y, int64_t n,
         int64_t k) {
    for (int64_t i = 0; i + k <= n; i++) {
        float acc = 0.0f;
        for (int64_t t = 0; t < k; t++)
            acc += x[i + t] * w[t];
        y[i] = acc;
    }
}
