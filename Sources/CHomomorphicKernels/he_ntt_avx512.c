// The negacyclic NTT written with AVX-512 intrinsics: the same Harvey butterflies, Shoup
// products and lazy bounds as the portable loops in he_kernels.c (whose results these equal bit
// for bit), but the four stages whose butterfly groups are narrower than a 16-lane register
// (t = 8, 4, 2, 1) gather their x and y halves from two registers with one permute each, instead
// of running as 8-, 4- and 2-lane loops. Everything is arithmetic, permutes and unsigned minimums:
// no branch or address depends on the data. Used for n ≥ 32 on CPUs with AVX-512F
// (netext_he_ntt_forward / _inverse choose at run time).
#include "he_ntt_avx512.h"

#if NETEXT_HAVE_AVX512_NTT
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/// High 32 bits of each lane's 32×32-bit product.
AVX512 static inline __m512i mulhi_u32(__m512i a, __m512i b) {
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(a, b), 32);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), _mm512_srli_epi64(b, 32));
    return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}

/// `x - bound` where `x >= bound`, else `x` (lanes below bound + 2^31): the unsigned minimum of
/// `x` and the wrapped difference.
AVX512 static inline __m512i subtract_if_at_least(__m512i x, __m512i bound) {
    return _mm512_min_epu32(x, _mm512_sub_epi32(x, bound));
}

/// x·w mod q in [0, 2q) with w' = ⌊w·2^32 / q⌋ (Shoup).
AVX512 static inline __m512i shoup_lazy(__m512i x, __m512i w, __m512i wshoup, __m512i q) {
    return _mm512_sub_epi32(_mm512_mullo_epi32(x, w), _mm512_mullo_epi32(mulhi_u32(x, wshoup), q));
}

/// Cooley–Tukey butterfly: (x, y) ← (u + p, u + 2q − p), u = x reduced below 2q, p = y·w.
AVX512 static inline void forward_butterfly(__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i twoq) {
    const __m512i u = subtract_if_at_least(*x, twoq);
    const __m512i p = shoup_lazy(*y, w, ws, q);
    *x = _mm512_add_epi32(u, p);
    *y = _mm512_sub_epi32(_mm512_add_epi32(u, twoq), p);
}

/// Gentleman–Sande butterfly: (x, y) ← (x + y reduced below 2q, (x + 2q − y)·w).
AVX512 static inline void inverse_butterfly(__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i twoq) {
    const __m512i u = *x, v = *y;
    *x = subtract_if_at_least(_mm512_add_epi32(u, v), twoq);
    *y = shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, twoq), v), w, ws, q);
}

#define LANES(...) _mm512_setr_epi32(__VA_ARGS__)

/// Permutations for one narrow stage: which lanes of (v0, v1) hold the x and y halves, how to
/// put them back, and how to spread the stage's twiddles over the x lanes.
typedef struct {
    __m512i x, y, low, high, spread;
    int twiddles;  // distinct twiddles per pair of registers
} narrow_stage;

AVX512 static narrow_stage stage(int t) {
    narrow_stage s;
    switch (t) {
    case 8:
        s.x = LANES(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        s.y = LANES(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
        s.low = LANES(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
        s.high = LANES(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
        s.spread = LANES(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        s.twiddles = 2;
        break;
    case 4:
        s.x = LANES(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
        s.y = LANES(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
        s.low = LANES(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
        s.high = LANES(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        s.spread = LANES(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        s.twiddles = 4;
        break;
    case 2:
        s.x = LANES(0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29);
        s.y = LANES(2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
        s.low = LANES(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
        s.high = LANES(8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
        s.spread = LANES(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        s.twiddles = 8;
        break;
    default:  // 1
        s.x = LANES(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        s.y = LANES(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        s.low = LANES(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        s.high = LANES(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
        s.spread = LANES(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        s.twiddles = 16;
        break;
    }
    return s;
}

/// The stage's twiddles for the butterflies in one pair of registers, spread over the lanes.
AVX512 static inline __m512i spread(const uint32_t *w, const narrow_stage *s) {
    const __mmask16 used = (__mmask16)((1u << s->twiddles) - 1);
    return _mm512_permutexvar_epi32(s->spread, _mm512_maskz_loadu_epi32(used, w));
}

/// One stage with t ≥ 16: `m` groups of 2t values, group i's butterflies with twiddle w[i].
AVX512 static inline __attribute__((always_inline)) void wide_stage(
    uint32_t *a, size_t t, size_t m, const uint32_t *w, const uint32_t *ws, __m512i q, __m512i twoq, int inverse) {
    for (size_t i = 0; i < m; i++) {
        const __m512i s = _mm512_set1_epi32((int)w[i]), sp = _mm512_set1_epi32((int)ws[i]);
        uint32_t *x = a + 2 * i * t, *y = x + t;
        for (size_t j = 0; j < t; j += 16) {
            __m512i vx = _mm512_loadu_si512(x + j), vy = _mm512_loadu_si512(y + j);
            if (inverse) inverse_butterfly(&vx, &vy, s, sp, q, twoq);
            else forward_butterfly(&vx, &vy, s, sp, q, twoq);
            _mm512_storeu_si512(x + j, vx);
            _mm512_storeu_si512(y + j, vy);
        }
    }
}

/// One stage with t ≤ 8: each pair of registers (32 values) holds 32 / (2t) whole butterfly
/// groups; group i's twiddle is w[i]. `reduce` brings the outputs below q (the forward
/// transform's last stage).
AVX512 static inline __attribute__((always_inline)) void narrow_pass(
    uint32_t *a, size_t n, int t, const uint32_t *w, const uint32_t *ws, __m512i q, __m512i twoq, int inverse, int reduce) {
    const narrow_stage s = stage(t);
    const size_t groups = (size_t)s.twiddles;
    for (size_t base = 0, i = 0; base < n; base += 32, i += groups) {
        const __m512i v0 = _mm512_loadu_si512(a + base), v1 = _mm512_loadu_si512(a + base + 16);
        __m512i x = _mm512_permutex2var_epi32(v0, s.x, v1), y = _mm512_permutex2var_epi32(v0, s.y, v1);
        const __m512i tw = spread(w + i, &s), tws = spread(ws + i, &s);
        if (inverse) inverse_butterfly(&x, &y, tw, tws, q, twoq);
        else forward_butterfly(&x, &y, tw, tws, q, twoq);
        if (reduce) {
            x = subtract_if_at_least(subtract_if_at_least(x, twoq), q);
            y = subtract_if_at_least(subtract_if_at_least(y, twoq), q);
        }
        _mm512_storeu_si512(a + base, _mm512_permutex2var_epi32(x, s.low, y));
        _mm512_storeu_si512(a + base + 16, _mm512_permutex2var_epi32(x, s.high, y));
    }
}

AVX512 void netext_he_ntt_forward_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q32) {
    const __m512i q = _mm512_set1_epi32((int)q32), twoq = _mm512_set1_epi32((int)(2 * q32));
    size_t m = 1;
    for (size_t t = n >> 1; t >= 16; t >>= 1, m <<= 1) wide_stage(a, t, m, w + m, ws + m, q, twoq, 0);
    for (int t = 8; t >= 1; t >>= 1, m <<= 1) narrow_pass(a, n, t, w + m, ws + m, q, twoq, 0, t == 1);
}

AVX512 void netext_he_ntt_inverse_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q32,
                                         uint32_t f, uint32_t fs, uint32_t g, uint32_t gs) {
    const __m512i q = _mm512_set1_epi32((int)q32), twoq = _mm512_set1_epi32((int)(2 * q32));
    // Stage twiddles start at h = m / 2, m halving from n.
    size_t m = n;
    for (int t = 1; t <= 8; t <<= 1, m >>= 1) narrow_pass(a, n, t, w + m / 2, ws + m / 2, q, twoq, 1, 0);
    for (size_t t = 16; m > 2; m >>= 1, t <<= 1) wide_stage(a, t, m / 2, w + m / 2, ws + m / 2, q, twoq, 1);
    // Last stage with N^−1 folded in: x ← (x + y)·N^−1, y ← (x − y)·N^−1·ψ^−(N/2)… (f, g as given).
    const __m512i vf = _mm512_set1_epi32((int)f), vfs = _mm512_set1_epi32((int)fs);
    const __m512i vg = _mm512_set1_epi32((int)g), vgs = _mm512_set1_epi32((int)gs);
    const size_t half = n >> 1;
    for (size_t j = 0; j < half; j += 16) {
        const __m512i u = _mm512_loadu_si512(a + j), v = _mm512_loadu_si512(a + half + j);
        const __m512i sum = subtract_if_at_least(_mm512_add_epi32(u, v), twoq);
        const __m512i r1 = shoup_lazy(sum, vf, vfs, q);
        const __m512i r2 = shoup_lazy(_mm512_sub_epi32(_mm512_add_epi32(u, twoq), v), vg, vgs, q);
        _mm512_storeu_si512(a + j, subtract_if_at_least(r1, q));
        _mm512_storeu_si512(a + half + j, subtract_if_at_least(r2, q));
    }
}

int netext_he_cpu_has_avx512(void) {
    static int cached = -1;
    int value = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("avx512f") ? 1 : 0;
        __atomic_store_n(&cached, value, __ATOMIC_RELAXED);
    }
    return value;
}
#endif
