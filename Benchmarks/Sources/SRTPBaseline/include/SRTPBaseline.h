// The libsrtp2 calls that MediaEngine's SRTPContext makes, written directly in C: the
// baseline SRTPContext is benchmarked against.
//
// A session is one direction of SRTP for any SSRC, configured exactly as
// SRTPContext.init configures it (see SRTPBaseline.c). The header stays free of libsrtp
// types so that it does not clash with MediaEngine's CSRTP module. Not thread-safe: one
// caller per session.
#ifndef SRTP_BASELINE_H
#define SRTP_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The profiles, by the names SRTPProfile uses.
typedef enum {
    BaselineSRTPProfileAESCM128HMACSHA1_80 = 0,
    BaselineSRTPProfileAEADAES128GCM = 1,
} BaselineSRTPProfile;

/// Status codes besides libsrtp's own (returned negated, so every failure is negative).
enum {
    BaselineSRTPMalformed = -1000,
    BaselineSRTPBufferTooSmall = -1001,
    BaselineSRTPClosed = -1002,
};

/// SRTPContext.trailerCapacity: bytes a buffer must hold beyond the packet.
enum { BaselineSRTPTrailerCapacity = 16 + 128 + 4 };

typedef struct BaselineSRTPSession BaselineSRTPSession;

/// Creates a session as SRTPContext(keying:direction:replayWindow:) does: the profile's
/// crypto policy for RTP and RTCP, ssrc any_outbound (outbound != 0) or any_inbound, the
/// given replay window, allow_repeat_tx 0. `key` is master key then salt (30 bytes, 28
/// for GCM). Returns NULL when libsrtp refuses.
///
/// Precondition: srtp_init has run in this process. libsrtp takes it once per process: a
/// second srtp_init re-registers libsrtp's debug module and fails with bad_param. In the
/// benchmarks SRTPContext makes that one call (when the first context is created), and
/// the baseline relies on it rather than racing it.
BaselineSRTPSession *baseline_srtp_create(BaselineSRTPProfile profile, const uint8_t *key, size_t key_length,
                                          int32_t outbound, int32_t replay_window);
void baseline_srtp_destroy(BaselineSRTPSession *session);

/// Encrypts and tags the RTP packet in `buffer[0..<length]` in place (`capacity` bytes,
/// at least length + BaselineSRTPTrailerCapacity). Returns the SRTP length, or a
/// negative status: a Baseline code, or a negated srtp_err_status_t.
int32_t baseline_srtp_protect(BaselineSRTPSession *session, uint8_t *buffer, size_t capacity, size_t length);

/// Checks and decrypts the SRTP packet in `buffer[0..<length]` in place. Returns the RTP
/// length, or a negative status as baseline_srtp_protect does.
int32_t baseline_srtp_unprotect(BaselineSRTPSession *session, uint8_t *buffer, size_t capacity, size_t length);

/// What a forwarding server does per packet, plainly: copies `packet` (as a socket
/// would fill a receive buffer) into `scratch`, unprotects it once with `inbound`, then
/// for each of `count` subscribers copies the plain packet into `outputs + i * stride`
/// and protects it with `outbound[i]`. Returns the bytes produced for all subscribers,
/// or a negative status.
int32_t baseline_srtp_forward(BaselineSRTPSession *inbound, BaselineSRTPSession *const *outbound, int32_t count,
                              const uint8_t *packet, size_t length, uint8_t *scratch, uint8_t *outputs, size_t stride);

#ifdef __cplusplus
}
#endif

#endif
