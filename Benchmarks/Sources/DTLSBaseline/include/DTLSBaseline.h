// The OpenSSL calls MediaEngine's DTLSEndpoint makes for one DTLS-SRTP handshake, written
// directly in C: the baseline DTLSEndpoint is benchmarked against.
//
// Both ends live in one process and pass their datagrams to each other in memory, as the
// Swift side of the benchmark does. The header stays free of OpenSSL types so that it does
// not clash with MediaEngine's CSSL module.
#ifndef DTLS_BASELINE_H
#define DTLS_BASELINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A P-256 key with a self-signed certificate, made as DTLSCertificate makes one.
typedef struct BaselineDTLSIdentity BaselineDTLSIdentity;

/// NULL when OpenSSL cannot make one.
BaselineDTLSIdentity *baseline_dtls_identity_new(void);
void baseline_dtls_identity_free(BaselineDTLSIdentity *identity);

/// One whole handshake between a client with `client` and a server with `server`: each end
/// set up as DTLSEndpoint.init sets it up (a context of its own, memory BIOs, 1,200-byte
/// records, the SRTP profiles, any certificate accepted by OpenSSL), every datagram handed
/// to the other end and followed by a handshake step there, as DTLSEndpoint reads a flight
/// datagram by datagram as it arrives, until both finished; then each end checks the other's certificate
/// against its SHA-256 fingerprint and exports the SRTP keying material. Returns 0 when
/// both ends agree on the same 56 or 60 bytes, negative otherwise. `server_cpu_ns`, when
/// not NULL, gets the CPU time the server end's calls took (this thread's CPU clock).
int baseline_dtls_handshake(const BaselineDTLSIdentity *client, const BaselineDTLSIdentity *server, int64_t *server_cpu_ns);

#ifdef __cplusplus
}
#endif

#endif
