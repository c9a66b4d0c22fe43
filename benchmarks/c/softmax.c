/* Numerically stable softmax over the rows of a rows x cols matrix. */
#include "bench.h"

void softmax(const float *restrict x, float *restrict out, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float m = xr[0];
        for (int64_t j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        for (int64_t j = 0; j < cols; j++)
            o[j] = expf(xr[j] - m);
        float s = lane_sum(o, cols);
        for (int64_t j = 0; j < cols; j++)
            o[j] /= s;
    }
}

/* The scalar-loop formulation's order: the exponentials summed by one sequential float32
 * accumulator, then each divided by the sum. */
void softmax_sequential(const float *restrict x, float *restrict out, int64_t rows,
                        int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *o = out + r * cols;
        float m = xr[0];
        for (int64_t j = 1; j < cols; j++)
            m = xr[j] > m ? xr[j] : m;
        float s = 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            o[j] = expf(xr[j] - m);
            s += o[j];
        }
        for (int64_t j = 0; j < cols; j++)
            o[j] /= s;
    }
}
