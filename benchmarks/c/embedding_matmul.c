/* out[n x m] = table[ids] @ w[d x m], the gathered row fed straight into an i-k-j product. */
#include "bench.h"

void embedding_matmul(const int64_t *restrict ids, const float *restrict table,
                      const float *restrict w, float *restrict out, int64_t n, int64_t d,
                      int64_t m) {
    for (int64_t i = 0; i < n; i++) {
        const float *row = table + ids[i] * d;
        float *o = out + i * m;
        memset(o, 0, (size_t)m * sizeof(float));
        for (int64_t k = 0; k < d; k++) {
            const float a = row[k];
            const float *wk = w + k * m;
            for (int64_t j = 0; j < m; j++)
                o[j] += a * wk[j];
        }
    }
}
