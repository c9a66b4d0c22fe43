/* The seed's bilateral filter with its exact types: the space kernel is float64 and varies
 * along the column offset only, the colour kernel is float32, the weighted sums are float64.
 */
#include "bench.h"

void bilateral_filter(const float *restrict img, float *restrict out, int64_t h, int64_t w,
                      double sigma_space, double sigma_color) {
    double space[11];
    for (int k = 0; k < 11; k++)
        space[k] = exp(-(double)((k - 5) * (k - 5)) / (2.0 * sigma_space * sigma_space));
    const float cden = (float)(2.0 * sigma_color * sigma_color);
    memset(out, 0, (size_t)(h * w) * sizeof(float));
    for (int64_t i = 5; i < h - 5; i++)
        for (int64_t j = 5; j < w - 5; j++) {
            const float c = img[i * w + j];
            double num = 0.0, den = 0.0;
            for (int64_t di = -5; di <= 5; di++) {
                const float *row = img + (i + di) * w + j - 5;
                for (int dj = 0; dj < 11; dj++) {
                    float d = c - row[dj];
                    double weight = space[dj] * (double)expf(-(d * d) / cden);
                    num += row[dj] * weight;
                    den += weight;
                }
            }
            out[i * w + j] = (float)(num / den);
        }
}
