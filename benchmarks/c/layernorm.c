/* Layer normalization over the rows of a rows x cols matrix, with gamma and beta. */
#include "bench.h"

void layernorm(const float *restrict x, const float *restrict gamma,
               const float *restrict beta, float eps, float *restrict out, int64_t rows,
               int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float mean = lane_sum(xr, cols) / (float)cols;
        float var = lane_sum_sq(xr, mean, cols) / (float)cols;
        float d = sqrtf(var + eps);
        for (int64_t j = 0; j < cols; j++)
            o[j] = (xr[j] - mean) / d * gamma[j] + beta[j];
    }
}

/* The scalar-loop formulation's order: one sequential float32 accumulator for the mean
 * and one for the variance, `(x - mu) * inv * gamma + beta` with inv = 1 / sqrt(v/m + eps). */
void layernorm_sequential(const float *restrict x, const float *restrict gamma,
                          const float *restrict beta, float eps, float *restrict out,
                          int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float s = 0.0f;
        for (int64_t j = 0; j < cols; j++)
            s += xr[j];
        float mu = s / (float)cols;
        float v = 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            float d = xr[j] - mu;
            v += d * d;
        }
        float inv = 1.0f / sqrtf(v / (float)cols + eps);
        for (int64_t j = 0; j < cols; j++)
            o[j] = (xr[j] - mu) * inv * gamma[j] + beta[j];
    }
}
