// See DTLSBaseline.h. The calls and settings are DTLSEndpoint's and DTLSCertificate's.
#include "DTLSBaseline.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/srtp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct BaselineDTLSIdentity {
    EVP_PKEY *key;
    X509 *certificate;
    unsigned char fingerprint[32];
};

BaselineDTLSIdentity *baseline_dtls_identity_new(void) {
    BaselineDTLSIdentity *identity = calloc(1, sizeof *identity);
    if (identity == NULL) return NULL;
    identity->key = EVP_EC_gen("P-256");
    identity->certificate = X509_new();
    unsigned char serial[8];
    BIGNUM *number = NULL;
    int made = identity->key != NULL && identity->certificate != NULL && RAND_bytes(serial, sizeof serial) == 1;
    if (made) number = BN_bin2bn(serial, sizeof serial, NULL);
    made = made && number != NULL && X509_set_version(identity->certificate, 2) == 1
        && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(identity->certificate)) != NULL
        && X509_gmtime_adj(X509_getm_notBefore(identity->certificate), -86400) != NULL
        && X509_gmtime_adj(X509_getm_notAfter(identity->certificate), 30L * 86400) != NULL
        && X509_set_pubkey(identity->certificate, identity->key) == 1;
    BN_free(number);
    X509_NAME *name = made ? X509_get_subject_name(identity->certificate) : NULL;
    made = made && name != NULL
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"mediaengine", -1, -1, 0) == 1
        && X509_set_issuer_name(identity->certificate, name) == 1
        && X509_sign(identity->certificate, identity->key, EVP_sha256()) > 0;
    unsigned int length = 0;
    made = made && X509_digest(identity->certificate, EVP_sha256(), identity->fingerprint, &length) == 1 && length == 32;
    if (!made) {
        baseline_dtls_identity_free(identity);
        return NULL;
    }
    return identity;
}

void baseline_dtls_identity_free(BaselineDTLSIdentity *identity) {
    if (identity == NULL) return;
    X509_free(identity->certificate);
    EVP_PKEY_free(identity->key);
    free(identity);
}

static int accept_any(int ok, X509_STORE_CTX *context) {
    (void)ok;
    (void)context;
    return 1;
}

typedef struct {
    SSL_CTX *context;
    SSL *ssl;
    BIO *input;
    BIO *output;
} End;

static int end_open(End *end, const BaselineDTLSIdentity *identity, int client) {
    memset(end, 0, sizeof *end);
    end->context = SSL_CTX_new(DTLS_method());
    if (end->context == NULL || SSL_CTX_use_certificate(end->context, identity->certificate) != 1
        || SSL_CTX_use_PrivateKey(end->context, identity->key) != 1
        || SSL_CTX_set_tlsext_use_srtp(end->context, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") != 0)
        return -1;
    end->ssl = SSL_new(end->context);
    end->input = BIO_new(BIO_s_mem());
    end->output = BIO_new(BIO_s_mem());
    if (end->ssl == NULL || end->input == NULL || end->output == NULL) return -1;
    BIO_set_mem_eof_return(end->input, -1);
    BIO_set_mem_eof_return(end->output, -1);
    SSL_set_bio(end->ssl, end->input, end->output);
    SSL_set_options(end->ssl, SSL_OP_NO_QUERY_MTU);
    SSL_set_mtu(end->ssl, 1200 - 28);
    DTLS_set_link_mtu(end->ssl, 1200);
    SSL_set_verify(end->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    if (client) SSL_set_connect_state(end->ssl); else SSL_set_accept_state(end->ssl);
    return 0;
}

static void end_close(End *end) {
    if (end->ssl != NULL) SSL_free(end->ssl);  // frees both BIOs
    else {
        BIO_free(end->input);
        BIO_free(end->output);
    }
    SSL_CTX_free(end->context);
}

static int step(End *end) {
    int result = SSL_do_handshake(end->ssl);
    if (result == 1) return 1;
    int error = SSL_get_error(end->ssl, result);
    return error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/// What `from` wrote, cut into datagrams of whole records of at most 1,200 bytes (as
/// DTLSEndpoint's collectOutput cuts them), each written into `to` and followed by a
/// handshake step there (as DTLSEndpoint's handle does: a flight is read as it arrives).
/// `done` is `to`'s state; `cpu`, when not NULL, gets the time `to`'s steps took.
static int deliver(End *from, End *to, int *done, int64_t *cpu);

static int64_t cpu_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time);
    return (int64_t)time.tv_sec * 1000000000 + time.tv_nsec;
}

static int deliver(End *from, End *to, int *done, int64_t *cpu) {
    unsigned char bytes[16384];
    for (;;) {
        int pending = (int)BIO_pending(from->output);
        if (pending <= 0) return 0;
        if (pending > (int)sizeof bytes) return -1;
        int read = BIO_read(from->output, bytes, pending);
        if (read <= 0) return 0;
        int offset = 0, start = 0;
        while (start < read) {
            // Whole records up to 1,200 bytes (a longer record goes alone).
            while (offset + 13 <= read) {
                int length = 13 + (bytes[offset + 11] << 8 | bytes[offset + 12]);
                if (offset > start && offset + length - start > 1200) break;
                offset += length;
            }
            if (offset <= start || offset > read) offset = read;
            BIO_write(to->input, bytes + start, offset - start);
            start = offset;
            int64_t started = cpu_now();
            if (*done == 0) *done = step(to);
            if (cpu != NULL) *cpu += cpu_now() - started;
            if (*done < 0) return -1;
        }
    }
}

/// The peer's certificate matches `expected`'s fingerprint, and the keys are exported.
static int finish(End *end, const BaselineDTLSIdentity *expected, unsigned char material[60], int *length) {
    X509 *peer = SSL_get1_peer_certificate(end->ssl);
    if (peer == NULL) return -1;
    unsigned char digest[32];
    unsigned int digest_length = 0;
    int matches = X509_digest(peer, EVP_sha256(), digest, &digest_length) == 1 && digest_length == 32
        && memcmp(digest, expected->fingerprint, 32) == 0;
    X509_free(peer);
    SRTP_PROTECTION_PROFILE *profile = SSL_get_selected_srtp_profile(end->ssl);
    if (!matches || profile == NULL) return -1;
    *length = profile->id == SRTP_AEAD_AES_128_GCM ? 56 : 60;
    const char *label = "EXTRACTOR-dtls_srtp";
    return SSL_export_keying_material(end->ssl, material, (size_t)*length, label, strlen(label), NULL, 0, 0) == 1 ? 0 : -1;
}

int baseline_dtls_handshake(const BaselineDTLSIdentity *client_identity, const BaselineDTLSIdentity *server_identity,
                            int64_t *server_cpu_ns) {
    End client = {0}, server = {0};
    int64_t server_cpu = 0, started = cpu_now();
    int status = end_open(&server, server_identity, 0);
    server_cpu += cpu_now() - started;
    if (status == 0) status = end_open(&client, client_identity, 1);
    int client_done = 0, server_done = 0;
    if (status == 0) client_done = step(&client);
    for (int round = 0; status == 0 && round < 16 && !(client_done && server_done); round++) {
        if (client_done < 0 || deliver(&client, &server, &server_done, &server_cpu) < 0) { status = -2; break; }
        started = cpu_now();
        int pending = (int)BIO_pending(server.output);
        server_cpu += cpu_now() - started;
        if (pending <= 0 && client_done) break;
        if (deliver(&server, &client, &client_done, NULL) < 0) { status = -3; break; }
    }
    unsigned char client_keys[60], server_keys[60];
    int client_length = 0, server_length = 0;
    if (status == 0 && !(client_done && server_done)) status = -4;
    if (status == 0 && finish(&client, server_identity, client_keys, &client_length) != 0) status = -5;
    started = cpu_now();
    if (status == 0 && finish(&server, client_identity, server_keys, &server_length) != 0) status = -6;
    server_cpu += cpu_now() - started;
    if (status == 0 && (client_length != server_length || memcmp(client_keys, server_keys, (size_t)client_length) != 0)) status = -7;
    started = cpu_now();
    end_close(&server);
    server_cpu += cpu_now() - started;
    end_close(&client);
    if (server_cpu_ns != NULL) *server_cpu_ns = server_cpu;
    return status;
}
