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
