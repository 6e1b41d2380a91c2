// OpenSSL's libcrypto (HMAC-SHA1/SHA-256 and MD5 for STUN integrity and TURN
// credentials) imports as it is: the one-shot HMAC() and EVP_Digest() are plain functions.
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
