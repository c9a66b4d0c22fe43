/* Adaptive average pooling of planes (n*c of them) of h x w to oh x ow.
 * Window rule of kernels.adaptive_avg_pool; each band of rows is first summed column-wise
 * (unit stride, vectorizes), then each window adds its columns. */
#include "bench.h"

void adaptive_avg_pool(const float *restrict x, float *restrict out, int64_t planes,
                       int64_t h, int64_t w, int64_t oh, int64_t ow) {
    float *colsum = malloc((size_t)w * sizeof(float));
    for (int64_t p = 0; p < planes; p++) {
        const float *plane = x + p * h * w;
        for (int64_t i = 0; i < oh; i++) {
            int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
            memset(colsum, 0, (size_t)w * sizeof(float));
            for (int64_t y = h0; y < h1; y++)
                for (int64_t c = 0; c < w; c++)
                    colsum[c] += plane[y * w + c];
            for (int64_t j = 0; j < ow; j++) {
                int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
                float s = 0.0f;
                for (int64_t c = w0; c < w1; c++)
                    s += colsum[c];
                out[(p * oh + i) * ow + j] = s / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
    free(colsum);
}

/* The kernel's own loops: each window summed on its own (one lane per window column,
 * rows in order), plane by plane.  No column sums shared between the windows of a band. */
void adaptive_avg_pool_windows(const float *restrict x, float *restrict out, int64_t planes,
                               int64_t h, int64_t w, int64_t oh, int64_t ow) {
    for (int64_t p = 0; p < planes; p++) {
        const float *plane = x + p * h * w;
        for (int64_t i = 0; i < oh; i++) {
            int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
            for (int64_t j = 0; j < ow; j++) {
                int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
                float s = 0.0f;
                for (int64_t y = h0; y < h1; y++)
                    for (int64_t c = w0; c < w1; c++)
                        s += plane[y * w + c];
                out[(p * oh + i) * ow + j] = s / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
}
