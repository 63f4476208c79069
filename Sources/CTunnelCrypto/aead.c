#include "CTunnelCrypto.h"
#include <string.h>

// BoringSSL's AEAD interface (include/openssl/aead.h), under the symbol prefix swift-crypto gives
// its vendored copy. Every binary that links this target also links swift-crypto (TunnelProtocol
// depends on both), and a test checks the results against swift-crypto's ChaChaPoly.
typedef struct evp_aead_st EVP_AEAD;
typedef struct evp_aead_ctx_st EVP_AEAD_CTX;
extern const EVP_AEAD *CCryptoBoringSSL_EVP_aead_chacha20_poly1305(void);
extern EVP_AEAD_CTX *CCryptoBoringSSL_EVP_AEAD_CTX_new(const EVP_AEAD *aead, const uint8_t *key, size_t key_len, size_t tag_len);
extern void CCryptoBoringSSL_EVP_AEAD_CTX_free(EVP_AEAD_CTX *ctx);
extern int CCryptoBoringSSL_EVP_AEAD_CTX_seal(const EVP_AEAD_CTX *ctx, uint8_t *out, size_t *out_len, size_t max_out_len,
                                              const uint8_t *nonce, size_t nonce_len, const uint8_t *in, size_t in_len,
                                              const uint8_t *ad, size_t ad_len);
extern int CCryptoBoringSSL_EVP_AEAD_CTX_open(const EVP_AEAD_CTX *ctx, uint8_t *out, size_t *out_len, size_t max_out_len,
                                              const uint8_t *nonce, size_t nonce_len, const uint8_t *in, size_t in_len,
                                              const uint8_t *ad, size_t ad_len);

enum { tag_length = 16 };

static void make_nonce(uint8_t nonce[12], uint64_t counter) {
    memset(nonce, 0, 4);
    for (int i = 0; i < 8; i++) nonce[4 + i] = (uint8_t)(counter >> (8 * i));
}

netext_aead *netext_aead_new(const uint8_t key[32]) {
    return (netext_aead *)CCryptoBoringSSL_EVP_AEAD_CTX_new(CCryptoBoringSSL_EVP_aead_chacha20_poly1305(), key, 32, tag_length);
}

void netext_aead_free(netext_aead *context) {
    if (context) CCryptoBoringSSL_EVP_AEAD_CTX_free((EVP_AEAD_CTX *)context);
}

int netext_aead_seal(const netext_aead *context, uint64_t counter, uint8_t *buffer, size_t length) {
    uint8_t nonce[12];
    make_nonce(nonce, counter);
    size_t written = 0;
    int ok = CCryptoBoringSSL_EVP_AEAD_CTX_seal((const EVP_AEAD_CTX *)context, buffer, &written, length + tag_length,
                                                nonce, sizeof(nonce), buffer, length, NULL, 0);
    return ok == 1 && written == length + tag_length ? 0 : -1;
}

long netext_aead_open(const netext_aead *context, uint64_t counter, uint8_t *buffer, size_t length) {
    if (length < tag_length) return -1;
    uint8_t nonce[12];
    make_nonce(nonce, counter);
    size_t written = 0;
    int ok = CCryptoBoringSSL_EVP_AEAD_CTX_open((const EVP_AEAD_CTX *)context, buffer, &written, length,
                                                nonce, sizeof(nonce), buffer, length, NULL, 0);
    return ok == 1 ? (long)written : -1;
}
