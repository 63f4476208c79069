#include "he_kernels.h"
#include "he_ntt_avx512.h"

#if defined(__x86_64__) && defined(__linux__)
#define NETEXT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NETEXT_CLONES
#endif

/// `x - bound` when `x >= bound`, else `x`, without a branch at any optimization level: the
/// borrow of `x - bound` (its top bit) selects. Exact for `bound <= 2^31` and
/// `x < bound + 2^31`, which holds here (moduli are below 2^30, values below 4q).
/// scripts/check-constant-time verifies the emitted code at -O0 to -O3.
static inline uint32_t subtract_if_at_least(uint32_t x, uint32_t bound) {
    const uint32_t d = x - bound;
    return d + (bound & (0u - (d >> 31)));
}

static inline uint32_t shoup_lazy(uint32_t x, uint32_t w, uint64_t wshoup, uint32_t q) {
    uint32_t estimate = (uint32_t)(((uint64_t)x * wshoup) >> 32);
    return x * w - estimate * q;  // in [0, 2q)
}

// The stages with t ≥ 4 vectorize along j; the last two (t = 2, t = 1) are written as loops over
// butterfly groups so the compiler vectorizes them with interleaved loads (measured: the NTT of
// N = 4096 went from 18.5 µs to 9.8 µs with AVX-512).
NETEXT_CLONES
static void ntt_forward_portable(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
    const uint32_t twoq = 2 * q;
    size_t t = n, m = 1;
    for (; t > 4; m <<= 1) {
        t >>= 1;
        for (size_t i = 0; i < m; i++) {
            const uint32_t s = w[m + i];
            const uint64_t sp = ws[m + i];
            uint32_t *restrict x = a + 2 * i * t;
            uint32_t *restrict y = x + t;
            for (size_t j = 0; j < t; j++) {
                uint32_t u = x[j];
                u = subtract_if_at_least(u, twoq);
                const uint32_t p = shoup_lazy(y[j], s, sp, q);
                x[j] = u + p;
                y[j] = u + twoq - p;
            }
        }
    }
    if (n >= 4) {  // t = 2: groups of four, (b0, b1) with (b2, b3)
        for (size_t i = 0; i < m; i++) {
            const uint32_t s = w[m + i];
            const uint64_t sp = ws[m + i];
            uint32_t *b = a + 4 * i;
            uint32_t u0 = b[0], u1 = b[1];
            u0 = subtract_if_at_least(u0, twoq);
            u1 = subtract_if_at_least(u1, twoq);
            const uint32_t p0 = shoup_lazy(b[2], s, sp, q), p1 = shoup_lazy(b[3], s, sp, q);
            b[0] = u0 + p0;
            b[1] = u1 + p1;
            b[2] = u0 + twoq - p0;
            b[3] = u1 + twoq - p1;
        }
        m <<= 1;
    }
    // t = 1, with the final reduction to [0, q) folded in.
    for (size_t i = 0; i < m; i++) {
        const uint32_t s = w[m + i];
        const uint64_t sp = ws[m + i];
        uint32_t *b = a + 2 * i;
        uint32_t u = b[0];
        u = subtract_if_at_least(u, twoq);
        const uint32_t p = shoup_lazy(b[1], s, sp, q);
        uint32_t x = u + p, y = u + twoq - p;
        x = subtract_if_at_least(x, twoq);
        x = subtract_if_at_least(x, q);
        y = subtract_if_at_least(y, twoq);
        y = subtract_if_at_least(y, q);
        b[0] = x;
        b[1] = y;
    }
}

NETEXT_CLONES
static void ntt_inverse_portable(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                                 uint32_t f, uint32_t fs, uint32_t g, uint32_t gs) {
    const uint32_t twoq = 2 * q;
    size_t t = 1, m = n;
    if (n >= 4) {
        // t = 1: pairs.
        size_t h = m >> 1;
        for (size_t i = 0; i < h; i++) {
            const uint32_t s = w[h + i];
            const uint64_t sp = ws[h + i];
            uint32_t *b = a + 2 * i;
            const uint32_t u = b[0], v = b[1];
            const uint32_t sum = u + v;
            b[0] = subtract_if_at_least(sum, twoq);
            b[1] = shoup_lazy(u + twoq - v, s, sp, q);
        }
        t = 2;
        m = h;
    }
    if (m > 2) {
        // t = 2: groups of four.
        size_t h = m >> 1;
        for (size_t i = 0; i < h; i++) {
            const uint32_t s = w[h + i];
            const uint64_t sp = ws[h + i];
            uint32_t *b = a + 4 * i;
            const uint32_t u0 = b[0], u1 = b[1], v0 = b[2], v1 = b[3];
            const uint32_t s0 = u0 + v0, s1 = u1 + v1;
            b[0] = subtract_if_at_least(s0, twoq);
            b[1] = subtract_if_at_least(s1, twoq);
            b[2] = shoup_lazy(u0 + twoq - v0, s, sp, q);
            b[3] = shoup_lazy(u1 + twoq - v1, s, sp, q);
        }
        t = 4;
        m = h;
    }
    for (; m > 2; m >>= 1) {
        const size_t h = m >> 1;
        for (size_t i = 0; i < h; i++) {
            const uint32_t s = w[h + i];
            const uint64_t sp = ws[h + i];
            uint32_t *restrict x = a + 2 * i * t;
            uint32_t *restrict y = x + t;
            for (size_t j = 0; j < t; j++) {
                const uint32_t u = x[j], v = y[j];
                uint32_t sum = u + v;
                x[j] = subtract_if_at_least(sum, twoq);
                y[j] = shoup_lazy(u + twoq - v, s, sp, q);
            }
        }
        t <<= 1;
    }
    const size_t half = n >> 1;
    uint32_t *restrict x = a;
    uint32_t *restrict y = a + half;
    for (size_t j = 0; j < half; j++) {
        const uint32_t u = x[j], v = y[j];
        uint32_t sum = u + v;
        sum = subtract_if_at_least(sum, twoq);
        uint32_t r1 = shoup_lazy(sum, f, fs, q);
        uint32_t r2 = shoup_lazy(u + twoq - v, g, gs, q);
        x[j] = subtract_if_at_least(r1, q);
        y[j] = subtract_if_at_least(r2, q);
    }
}

// AVX-512 CPUs take the hand-written transform (he_ntt_avx512.c: the narrow last stages as
// register permutes), others the portable loops above, compiled for AVX2 or baseline x86-64.
void netext_he_ntt_forward(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q) {
#if NETEXT_HAVE_AVX512_NTT
    if (n >= 32 && netext_he_cpu_has_avx512()) {
        netext_he_ntt_forward_avx512(a, n, w, ws, q);
        return;
    }
#endif
    ntt_forward_portable(a, n, w, ws, q);
}

void netext_he_ntt_inverse(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                           uint32_t f, uint32_t fs, uint32_t g, uint32_t gs) {
#if NETEXT_HAVE_AVX512_NTT
    if (n >= 32 && netext_he_cpu_has_avx512()) {
        netext_he_ntt_inverse_avx512(a, n, w, ws, q, f, fs, g, gs);
        return;
    }
#endif
    ntt_inverse_portable(a, n, w, ws, q, f, fs, g, gs);
}

NETEXT_CLONES
void netext_he_multiply_accumulate(uint64_t *restrict acc, const uint32_t *restrict x, const uint32_t *restrict y,
                                   size_t count) {
    for (size_t j = 0; j < count; j++) acc[j] += (uint64_t)x[j] * y[j];
}

NETEXT_CLONES
void netext_he_multiply_accumulate_pair(uint64_t *restrict acc0, uint64_t *restrict acc1, const uint32_t *restrict x,
                                        const uint32_t *restrict b, const uint32_t *restrict a, size_t count) {
    for (size_t j = 0; j < count; j++) {
        const uint64_t v = x[j];
        acc0[j] += v * b[j];
        acc1[j] += v * a[j];
    }
}

static inline uint32_t reduce64(uint64_t x, uint32_t q, uint32_t c, uint32_t cs, uint32_t r) {
    const uint32_t hi = (uint32_t)(x >> 32), lo = (uint32_t)x;
    uint32_t v = shoup_lazy(hi, c, cs, q) + shoup_lazy(lo, 1, r, q);  // < 4q < 2^32
    v = subtract_if_at_least(v, 2 * q);
    return subtract_if_at_least(v, q);
}

NETEXT_CLONES
void netext_he_reduce64(uint32_t *restrict out, const uint64_t *restrict x, size_t count, uint32_t q, uint32_t c,
                        uint32_t cs, uint32_t r) {
    for (size_t j = 0; j < count; j++) out[j] = reduce64(x[j], q, c, cs, r);
}

NETEXT_CLONES
void netext_he_reduce64_in_place(uint64_t *x, size_t count, uint32_t q, uint32_t c, uint32_t cs, uint32_t r) {
    for (size_t j = 0; j < count; j++) x[j] = reduce64(x[j], q, c, cs, r);
}

NETEXT_CLONES
void netext_he_reduce_once(uint32_t *values, size_t count, uint32_t q) {
    for (size_t j = 0; j < count; j++) values[j] = subtract_if_at_least(values[j], q);
}

NETEXT_CLONES
void netext_he_reduce32(uint32_t *restrict out, const uint32_t *restrict x, size_t count, uint32_t q, uint32_t r) {
    for (size_t j = 0; j < count; j++) {
        uint32_t v = shoup_lazy(x[j], 1, r, q);
        out[j] = subtract_if_at_least(v, q);
    }
}

NETEXT_CLONES
void netext_he_subtract_multiply(uint32_t *restrict row, const uint32_t *restrict correction, size_t count, uint32_t q,
                                 uint32_t inv, uint32_t invs) {
    for (size_t j = 0; j < count; j++) {
        uint32_t d = row[j] + q - correction[j];
        uint32_t v = shoup_lazy(d, inv, invs, q);
        v = subtract_if_at_least(v, q);
        row[j] = v;
    }
}

NETEXT_CLONES
void netext_he_multiply_add_mod(uint32_t *restrict out, const uint32_t *restrict x, const uint32_t *restrict y, size_t count,
                                uint32_t q, uint32_t c, uint32_t cs, uint32_t r) {
    for (size_t j = 0; j < count; j++) {
        uint32_t v = out[j] + reduce64((uint64_t)x[j] * y[j], q, c, cs, r);
        out[j] = subtract_if_at_least(v, q);
    }
}

NETEXT_CLONES
void netext_he_lift(const uint32_t *restrict x, uint32_t *restrict out, size_t n, size_t levels, size_t auxiliary,
                    const uint32_t *q, const uint32_t *y, const uint32_t *ys, const double *inverse_q,
                    const uint32_t *b, const uint32_t *b_c, const uint32_t *b_cs, const uint32_t *b_r,
                    const uint32_t *q_hat_mod_b, const uint32_t *q_mod_b, uint32_t *restrict terms,
                    double *restrict fraction, uint64_t *restrict sums) {
    for (size_t j = 0; j < n; j++) fraction[j] = 0.5;
    for (size_t i = 0; i < levels; i++) {
        const uint32_t qi = q[i], yi = y[i], ysi = ys[i];
        const double inv = inverse_q[i];
        const uint32_t *restrict row = x + i * n;
        uint32_t *restrict t = terms + i * n;
        for (size_t j = 0; j < n; j++) {
            uint32_t v = shoup_lazy(row[j], yi, ysi, qi);
            v = subtract_if_at_least(v, qi);
            t[j] = v;
            fraction[j] += (double)v * inv;
        }
    }
    for (size_t a = 0; a < auxiliary; a++) {
        const uint32_t ba = b[a], c = b_c[a], cs = b_cs[a], r = b_r[a];
        const uint64_t qmb = q_mod_b[a];
        uint32_t *restrict o = out + a * n;
        for (size_t j = 0; j < n; j++) sums[j] = 0;
        for (size_t i = 0; i < levels; i++) {
            const uint64_t factor = q_hat_mod_b[a * levels + i];
            const uint32_t *restrict t = terms + i * n;
            for (size_t j = 0; j < n; j++) sums[j] += (uint64_t)t[j] * factor;
        }
        for (size_t j = 0; j < n; j++) {
            const uint32_t positive = reduce64(sums[j], ba, c, cs, r);
            const uint32_t negative = reduce64((uint64_t)(uint32_t)fraction[j] * qmb, ba, c, cs, r);
            const uint32_t d = positive + ba - negative;
            o[j] = subtract_if_at_least(d, ba);
        }
    }
}
