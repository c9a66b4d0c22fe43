/* Direct convolution, NCHW, valid padding, stride 1: the loops of kernels.conv2d, with the
 * image row loop innermost (unit stride). */
#include "bench.h"

void conv2d(const float *restrict x, const float *restrict wt, float *restrict out,
            int64_t n, int64_t c, int64_t h, int64_t wd, int64_t k, int64_t r, int64_t s) {
    const int64_t oh = h - r + 1, ow = wd - s + 1;
    memset(out, 0, (size_t)(n * k * oh * ow) * sizeof(float));
    for (int64_t b = 0; b < n; b++)
        for (int64_t o = 0; o < k; o++) {
            float *dst = out + (b * k + o) * oh * ow;
            for (int64_t ci = 0; ci < c; ci++)
                for (int64_t dy = 0; dy < r; dy++)
                    for (int64_t dx = 0; dx < s; dx++) {
                        const float wv = wt[((o * c + ci) * r + dy) * s + dx];
                        const float *src = x + ((b * c + ci) * h + dy) * wd + dx;
                        for (int64_t y = 0; y < oh; y++)
                            for (int64_t xx = 0; xx < ow; xx++)
                                dst[y * ow + xx] += wv * src[y * wd + xx];
                    }
        }
}
