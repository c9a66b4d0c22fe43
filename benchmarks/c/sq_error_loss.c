/* sum((pred - target)**2): 8 float lanes per block of 4096, blocks added in double so the
 * result is as accurate as numpy's pairwise sum. */
#include "bench.h"

#define BLOCK 4096

float sq_error_loss(const float *restrict pred, const float *restrict target, int64_t n) {
    double total = 0.0;
    for (int64_t b = 0; b < n; b += BLOCK) {
        int64_t len = n - b < BLOCK ? n - b : BLOCK;
        total += lane_sum_sq_diff(pred + b, target + b, len);
    }
    return (float)total;
}

/* The same sum written as the scalar-loop formulation writes it (one float32
 * accumulator, `s += d * d` in index order): strict IEEE keeps that order, so this is
 * the C a compiler may not beat without changing the result. */
float sq_error_loss_sequential(const float *restrict pred, const float *restrict target,
                               int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float d = pred[i] - target[i];
        s += d * d;
    }
    return s;
}
