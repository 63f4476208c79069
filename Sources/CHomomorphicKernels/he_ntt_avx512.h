// Internal: the AVX-512 NTT (he_ntt_avx512.c) and the run-time check that selects it.
#ifndef NETEXT_HE_NTT_AVX512_H
#define NETEXT_HE_NTT_AVX512_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__linux__) && !defined(NETEXT_PORTABLE_ONLY)
#define NETEXT_HAVE_AVX512_NTT 1
/// Nonzero when the CPU executes AVX-512F (checked once).
int netext_he_cpu_has_avx512(void);
/// As netext_he_ntt_forward / _inverse, for n ≥ 32 (a power of two).
void netext_he_ntt_forward_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q);
void netext_he_ntt_inverse_avx512(uint32_t *a, size_t n, const uint32_t *w, const uint32_t *ws, uint32_t q,
                                  uint32_t f, uint32_t fs, uint32_t g, uint32_t gs);
#else
#define NETEXT_HAVE_AVX512_NTT 0
#endif

#endif
