// Wrappers for what Swift cannot call in libsrtp2: the crypto-policy macros.
#ifndef CSRTP_SHIM_H
#define CSRTP_SHIM_H
#include <srtp2/srtp.h>

static inline void CSRTP_crypto_policy_set_aes_cm_128_hmac_sha1_80(srtp_crypto_policy_t *p) {
    srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(p);
}

#endif
