// OpenSSL's libssl for DTLS-SRTP (RFC 5763/5764). What OpenSSL defines as macros Swift
// cannot import; these inline functions are those macros, nothing more.
#ifndef CSSL_SHIM_H
#define CSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/srtp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

static inline long CSSL_DTLS_get_timeout(SSL *ssl, struct timeval *remaining) { return DTLSv1_get_timeout(ssl, remaining); }
static inline long CSSL_DTLS_handle_timeout(SSL *ssl) { return DTLSv1_handle_timeout(ssl); }
static inline long CSSL_DTLS_set_link_mtu(SSL *ssl, long mtu) { return DTLS_set_link_mtu(ssl, mtu); }
static inline long CSSL_set_mtu(SSL *ssl, long mtu) { return SSL_set_mtu(ssl, mtu); }
static inline long CSSL_BIO_set_mem_eof_return(BIO *bio, long value) { return BIO_set_mem_eof_return(bio, value); }
static inline size_t CSSL_BIO_pending(BIO *bio) { return BIO_pending(bio); }
static inline EVP_PKEY *CSSL_EC_P256(void) { return EVP_EC_gen("P-256"); }
static inline uint64_t CSSL_OP_NO_QUERY_MTU(void) { return SSL_OP_NO_QUERY_MTU; }
static inline long CSSL_set_read_ahead(SSL *ssl, int yes) { SSL_set_read_ahead(ssl, yes); return 1; }
// Every certificate passes OpenSSL's own check: WebRTC certificates are self-signed, and
// what authenticates the peer is the fingerprint its signaling sent, checked afterwards.
static int CSSL_accept_any_certificate(int ok, X509_STORE_CTX *context) { (void)ok; (void)context; return 1; }
static inline void CSSL_verify_with_fingerprints(SSL *ssl) {
    SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, CSSL_accept_any_certificate);
}
// OpenSSL's retransmission timer (RFC 6347 4.2.4.1: an initial timeout, doubled up to 60 s)
// with the initial timeout this SSL was given, in microseconds, kept in its app data.
static unsigned int CSSL_DTLS_timer(SSL *ssl, unsigned int previous) {
    if (previous == 0) return (unsigned int)(uintptr_t)SSL_get_app_data(ssl);
    return previous >= 30000000u ? 60000000u : previous * 2;
}
static inline void CSSL_DTLS_set_initial_timeout(SSL *ssl, unsigned int microseconds) {
    SSL_set_app_data(ssl, (void *)(uintptr_t)microseconds);
    DTLS_set_timer_cb(ssl, CSSL_DTLS_timer);
}
#endif
