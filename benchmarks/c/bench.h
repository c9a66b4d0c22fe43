/* Shared by the benchmark C kernels: includes and 8-lane float sums.
 *
 * A float reduction written as one accumulator is a serial dependency chain that gcc may
 * not vectorize without -ffast-math (it would reassociate).  Eight independent lanes are the
 * standard idiom that vectorizes at plain -O3, and they are what pyasc promises to emit, so
 * the C baseline uses them wherever a long sum is the hot loop.
 */
#ifndef BENCH_H
#define BENCH_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LANES 8

static inline float lanes_total(const float acc[LANES]) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* sum(a[0..n)) */
static inline float lane_sum(const float *restrict a, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += a[i + l];
    for (; i < n; i++)
        acc[0] += a[i];
    return lanes_total(acc);
}

/* sum((a[0..n) - c)**2) */
static inline float lane_sum_sq(const float *restrict a, float c, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float d = a[i + l] - c;
            acc[l] += d * d;
        }
    for (; i < n; i++) {
        float d = a[i] - c;
        acc[0] += d * d;
    }
    return lanes_total(acc);
}

/* sum((a[0..n) - b[0..n))**2) */
static inline float lane_sum_sq_diff(const float *restrict a, const float *restrict b,
                                     int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float d = a[i + l] - b[i + l];
            acc[l] += d * d;
        }
    for (; i < n; i++) {
        float d = a[i] - b[i];
        acc[0] += d * d;
    }
    return lanes_total(acc);
}

#endif
