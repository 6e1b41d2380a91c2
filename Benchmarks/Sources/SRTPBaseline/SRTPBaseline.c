// Mirrors Sources/MediaEngine/SRTP/SRTPContext.swift and SRTPProfile.swift call for
// call, so that a benchmark difference is the wrapper's own cost. When SRTPContext
// changes its policy, change it here too: WireBenchmarks checks at setup that both
// produce byte-identical SRTP packets and stops if they do not.
#include "SRTPBaseline.h"

#include <stdlib.h>
#include <string.h>

#include <srtp2/srtp.h>

struct BaselineSRTPSession {
    srtp_t session;
    int outbound;
    // SRTPContext.Statistics, kept the same way (one increment per packet).
    long packets_protected;
    long packets_unprotected;
    long authentication_failures;
    long replays;
    long too_old;
    long other_failures;
};

BaselineSRTPSession *baseline_srtp_create(BaselineSRTPProfile profile, const uint8_t *key, size_t key_length,
                                          int32_t outbound, int32_t replay_window) {
    // No srtp_init here: libsrtp takes one per process (see SRTPBaseline.h), and
    // SRTPContext has made it.
    if (replay_window < 64 || replay_window > 32768) return NULL;
    size_t expected_length = profile == BaselineSRTPProfileAEADAES128GCM ? 28 : 30;
    if (key == NULL || key_length != expected_length) return NULL;

    // srtp_policy_t() in Swift: every field zero, then the same assignments.
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    switch (profile) {
    case BaselineSRTPProfileAEADAES128GCM:
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
        break;
    case BaselineSRTPProfileAESCM128HMACSHA1_80:
    default:
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
        break;
    }
    policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
    policy.window_size = (unsigned long)replay_window;
    policy.allow_repeat_tx = 0;
    // SRTPContext hands libsrtp a mutable copy of the key and wipes it afterwards.
    unsigned char copy[30];
    memcpy(copy, key, key_length);
    policy.key = copy;
    srtp_t created = NULL;
    srtp_err_status_t status = srtp_create(&created, &policy);
    memset(copy, 0, sizeof copy);
    if (status != srtp_err_status_ok || created == NULL) return NULL;

    BaselineSRTPSession *session = calloc(1, sizeof *session);
    if (session == NULL) {
        srtp_dealloc(created);
        return NULL;
    }
    session->session = created;
    session->outbound = outbound != 0;
    return session;
}

void baseline_srtp_destroy(BaselineSRTPSession *session) {
    if (session == NULL) return;
    if (session->session != NULL) srtp_dealloc(session->session);
    free(session);
}

// SRTPContext.run(_:_:rtcp: false, protect:), check for check.
static int32_t run(BaselineSRTPSession *session, uint8_t *buffer, size_t capacity, size_t length, int protect) {
    if (session->session == NULL || buffer == NULL) return BaselineSRTPClosed;
    // The Swift precondition: a context only goes one way.
    if (protect != session->outbound) abort();
    if (length < 12 || length > capacity) {
        if (!protect) session->other_failures += 1;
        return BaselineSRTPMalformed;
    }
    if (protect && capacity < length + BaselineSRTPTrailerCapacity) return BaselineSRTPBufferTooSmall;
    int size = (int)length;
    srtp_err_status_t status = protect ? srtp_protect(session->session, buffer, &size)
                                       : srtp_unprotect(session->session, buffer, &size);
    if (status == srtp_err_status_ok) {
        if (protect) session->packets_protected += 1; else session->packets_unprotected += 1;
        return (int32_t)size;
    }
    switch (status) {
    case srtp_err_status_auth_fail: session->authentication_failures += 1; break;
    case srtp_err_status_replay_fail: session->replays += 1; break;
    case srtp_err_status_replay_old: session->too_old += 1; break;
    default: if (!protect) session->other_failures += 1; break;
    }
    return -(int32_t)status;
}

int32_t baseline_srtp_protect(BaselineSRTPSession *session, uint8_t *buffer, size_t capacity, size_t length) {
    return run(session, buffer, capacity, length, 1);
}

int32_t baseline_srtp_unprotect(BaselineSRTPSession *session, uint8_t *buffer, size_t capacity, size_t length) {
    return run(session, buffer, capacity, length, 0);
}

int32_t baseline_srtp_forward(BaselineSRTPSession *inbound, BaselineSRTPSession *const *outbound, int32_t count,
                              const uint8_t *packet, size_t length, uint8_t *scratch, uint8_t *outputs, size_t stride) {
    if (length + BaselineSRTPTrailerCapacity > stride) return BaselineSRTPBufferTooSmall;
    memcpy(scratch, packet, length);
    int32_t plain = baseline_srtp_unprotect(inbound, scratch, stride, length);
    if (plain < 0) return plain;
    int32_t total = 0;
    for (int32_t index = 0; index < count; index++) {
        uint8_t *output = outputs + (size_t)index * stride;
        memcpy(output, scratch, (size_t)plain);
        int32_t protected_length = baseline_srtp_protect(outbound[index], output, stride, (size_t)plain);
        if (protected_length < 0) return protected_length;
        total += protected_length;
    }
    return total;
}
