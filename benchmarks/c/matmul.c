/* out[n x m] = a[n x kk] @ b[kk x m], i-k-j loop order (unit-stride inner loop). */
#include "bench.h"

void matmul(const float *restrict a, const float *restrict b, float *restrict out, int64_t n,
            int64_t kk, int64_t m) {
    for (int64_t i = 0; i < n; i++) {
        float *o = out + i * m;
        memset(o, 0, (size_t)m * sizeof(float));
        for (int64_t k = 0; k < kk; k++) {
            const float av = a[i * kk + k];
            const float *bk = b + k * m;
            for (int64_t j = 0; j < m; j++)
                o[j] += av * bk[j];
        }
    }
}
