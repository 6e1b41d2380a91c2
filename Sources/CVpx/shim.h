// Wrappers for what Swift cannot call in libvpx: the init macros (they pass
// the ABI version) and the variadic vpx_codec_control_. Nothing else belongs here.
#ifndef CVPX_SHIM_H
#define CVPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

static inline vpx_codec_err_t CVpx_codec_enc_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                  const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, iface, cfg, flags);
}

/// One context per resolution, highest first: ctx, cfg and dsf are arrays of num_enc.
static inline vpx_codec_err_t CVpx_codec_enc_init_multi(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                        vpx_codec_enc_cfg_t *cfg, int num_enc,
                                                        vpx_codec_flags_t flags, vpx_rational_t *dsf) {
    return vpx_codec_enc_init_multi(ctx, iface, cfg, num_enc, flags, dsf);
}

static inline vpx_codec_err_t CVpx_codec_dec_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface,
                                                  const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_dec_init(ctx, iface, cfg, flags);
}

/// vpx_codec_control_ for controls that take an int argument.
static inline vpx_codec_err_t CVpx_codec_control_int(vpx_codec_ctx_t *ctx, int id, int value) {
    return vpx_codec_control_(ctx, id, value);
}

/// vpx_codec_control_ for controls that return an int through a pointer.
static inline vpx_codec_err_t CVpx_codec_control_int_pointer(vpx_codec_ctx_t *ctx, int id, int *value) {
    return vpx_codec_control_(ctx, id, value);
}

/// VPX_DL_REALTIME imports as Int32; vpx_codec_encode takes an unsigned long.
static const unsigned long CVpx_DL_REALTIME = VPX_DL_REALTIME;
static const unsigned long CVpx_DL_GOOD_QUALITY = VPX_DL_GOOD_QUALITY;
static const unsigned long CVpx_DL_BEST_QUALITY = VPX_DL_BEST_QUALITY;

#endif
