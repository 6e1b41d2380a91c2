// Mirrors Sources/MediaEngine/Codecs/{OpusEncoder,OpusDecoder,VP8Encoder,VP8Decoder}.swift
// call for call, so that a benchmark difference is the wrappers' own cost. When a
// wrapper changes its library settings, change them here too: CodecBenchmarks checks
// at setup that both produce byte-identical output and stops if they do not.
#include "CodecBaseline.h"

#include <stdlib.h>
#include <string.h>

#include <libyuv.h>
#include <opus/opus.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vpx_encoder.h>

// MARK: Opus

struct BaselineOpusEncoder {
    OpusEncoder *state;
    int32_t channels;
    int32_t samples_per_frame;
};

struct BaselineOpusDecoder {
    OpusDecoder *state;
    int32_t channels;
};

static int opus_application(BaselineOpusApplication application) {
    switch (application) {
    case BaselineOpusApplicationAudio: return OPUS_APPLICATION_AUDIO;
    case BaselineOpusApplicationRestrictedLowDelay: return OPUS_APPLICATION_RESTRICTED_LOWDELAY;
    case BaselineOpusApplicationVoIP:
    default: return OPUS_APPLICATION_VOIP;
    }
}

BaselineOpusEncoder *baseline_opus_encoder_create(int32_t sample_rate, int32_t channels,
                                                  BaselineOpusApplication application, int32_t bitrate,
                                                  int32_t complexity, int32_t inband_fec,
                                                  int32_t packet_loss_percent, int32_t dtx, int32_t vbr,
                                                  int32_t samples_per_frame) {
    int status = OPUS_OK;
    OpusEncoder *state = opus_encoder_create(sample_rate, channels, opus_application(application), &status);
    if (state == NULL || status != OPUS_OK) return NULL;
    // Same ctls, same order as Opus.Encoder.init.
    if (opus_encoder_ctl(state, OPUS_SET_BITRATE(bitrate)) != OPUS_OK
        || opus_encoder_ctl(state, OPUS_SET_COMPLEXITY(complexity)) != OPUS_OK
        || opus_encoder_ctl(state, OPUS_SET_INBAND_FEC(inband_fec)) != OPUS_OK
        || opus_encoder_ctl(state, OPUS_SET_PACKET_LOSS_PERC(packet_loss_percent)) != OPUS_OK
        || opus_encoder_ctl(state, OPUS_SET_DTX(dtx)) != OPUS_OK
        || opus_encoder_ctl(state, OPUS_SET_VBR(vbr)) != OPUS_OK) {
        opus_encoder_destroy(state);
        return NULL;
    }
    BaselineOpusEncoder *encoder = malloc(sizeof *encoder);
    if (encoder == NULL) {
        opus_encoder_destroy(state);
        return NULL;
    }
    encoder->state = state;
    encoder->channels = channels;
    encoder->samples_per_frame = samples_per_frame;
    return encoder;
}

void baseline_opus_encoder_destroy(BaselineOpusEncoder *encoder) {
    if (encoder == NULL) return;
    opus_encoder_destroy(encoder->state);
    free(encoder);
}

int32_t baseline_opus_encode(BaselineOpusEncoder *encoder, const int16_t *pcm, size_t sample_count,
                             uint8_t *output, size_t capacity) {
    // The checks Opus.Encoder.encode(_:into:) makes before calling libopus.
    if (pcm == NULL || sample_count != (size_t)encoder->samples_per_frame * (size_t)encoder->channels) {
        return OPUS_BAD_ARG;
    }
    if (output == NULL) return OPUS_BUFFER_TOO_SMALL;
    return opus_encode(encoder->state, pcm, encoder->samples_per_frame, output, (opus_int32)capacity);
}

BaselineOpusDecoder *baseline_opus_decoder_create(int32_t sample_rate, int32_t channels) {
    int status = OPUS_OK;
    OpusDecoder *state = opus_decoder_create(sample_rate, channels, &status);
    if (state == NULL || status != OPUS_OK) return NULL;
    BaselineOpusDecoder *decoder = malloc(sizeof *decoder);
    if (decoder == NULL) {
        opus_decoder_destroy(state);
        return NULL;
    }
    decoder->state = state;
    decoder->channels = channels;
    return decoder;
}

void baseline_opus_decoder_destroy(BaselineOpusDecoder *decoder) {
    if (decoder == NULL) return;
    opus_decoder_destroy(decoder->state);
    free(decoder);
}

int32_t baseline_opus_decode(BaselineOpusDecoder *decoder, const uint8_t *packet, size_t length,
                             int16_t *pcm, size_t capacity) {
    if (packet == NULL || length == 0) return OPUS_INVALID_PACKET;
    int32_t frames = (int32_t)(capacity / (size_t)decoder->channels);
    if (pcm == NULL || frames <= 0) return OPUS_BUFFER_TOO_SMALL;
    return opus_decode(decoder->state, packet, (opus_int32)length, pcm, frames, 0);
}

// MARK: VP8

enum { VP8ClockRate = 90000 };

struct BaselineVP8Encoder {
    // Inside a heap block: libvpx keeps pointers into the context, so it must not move.
    vpx_codec_ctx_t context;
    vpx_image_t image;
    int64_t last_pts;
    unsigned long frame_duration_ticks;
    int32_t width;
    int32_t height;
};

struct BaselineVP8Decoder {
    vpx_codec_ctx_t context;
};

BaselineVP8Encoder *baseline_vp8_encoder_create(int32_t width, int32_t height, int32_t bitrate,
                                                int32_t frame_rate, int32_t cpu_used, int32_t threads,
                                                int32_t keyframe_interval, int32_t error_resilient,
                                                int32_t allows_frame_drops) {
    if (width <= 0 || height <= 0 || frame_rate <= 0) return NULL;
    BaselineVP8Encoder *encoder = calloc(1, sizeof *encoder);
    if (encoder == NULL) return NULL;

    // Field for field what VP8.Encoder.open() sets.
    vpx_codec_enc_cfg_t cfg;
    if (vpx_codec_enc_config_default(vpx_codec_vp8_cx(), &cfg, 0) != VPX_CODEC_OK) {
        free(encoder);
        return NULL;
    }
    cfg.g_w = (unsigned int)width;
    cfg.g_h = (unsigned int)height;
    cfg.g_threads = (unsigned int)threads;
    cfg.g_timebase.num = 1;
    cfg.g_timebase.den = VP8ClockRate;
    cfg.g_lag_in_frames = 0;
    cfg.g_error_resilient = error_resilient ? VPX_ERROR_RESILIENT_DEFAULT : 0;
    cfg.g_pass = VPX_RC_ONE_PASS;
    cfg.rc_end_usage = VPX_CBR;
    cfg.rc_target_bitrate = (unsigned int)(bitrate / 1000);
    cfg.rc_min_quantizer = 2;
    cfg.rc_max_quantizer = 56;
    cfg.rc_undershoot_pct = 100;
    cfg.rc_overshoot_pct = 15;
    cfg.rc_buf_initial_sz = 500;
    cfg.rc_buf_optimal_sz = 600;
    cfg.rc_buf_sz = 1000;
    cfg.rc_dropframe_thresh = allows_frame_drops ? 30 : 0;
    cfg.kf_mode = VPX_KF_AUTO;
    cfg.kf_min_dist = 0;
    cfg.kf_max_dist = (unsigned int)keyframe_interval;
    if (vpx_codec_enc_init(&encoder->context, vpx_codec_vp8_cx(), &cfg, 0) != VPX_CODEC_OK) {
        free(encoder);
        return NULL;
    }
    if (vpx_codec_control_(&encoder->context, VP8E_SET_CPUUSED, cpu_used) != VPX_CODEC_OK
        || vpx_codec_control_(&encoder->context, VP8E_SET_STATIC_THRESHOLD, 1) != VPX_CODEC_OK
        || vpx_codec_control_(&encoder->context, VP8E_SET_NOISE_SENSITIVITY, 0) != VPX_CODEC_OK
        || vpx_codec_control_(&encoder->context, VP8E_SET_MAX_INTRA_BITRATE_PCT, 300) != VPX_CODEC_OK) {
        vpx_codec_destroy(&encoder->context);
        free(encoder);
        return NULL;
    }

    // An image header only: its planes point into the caller's frame during encode.
    encoder->image.fmt = VPX_IMG_FMT_I420;
    encoder->image.w = (unsigned int)width;
    encoder->image.h = (unsigned int)height;
    encoder->image.d_w = encoder->image.w;
    encoder->image.d_h = encoder->image.h;
    encoder->image.x_chroma_shift = 1;
    encoder->image.y_chroma_shift = 1;
    encoder->image.bps = 12;
    encoder->image.bit_depth = 8;
    encoder->last_pts = -1;
    encoder->frame_duration_ticks = (unsigned long)(VP8ClockRate / frame_rate);
    encoder->width = width;
    encoder->height = height;
    return encoder;
}

void baseline_vp8_encoder_destroy(BaselineVP8Encoder *encoder) {
    if (encoder == NULL) return;
    vpx_codec_destroy(&encoder->context);
    free(encoder);
}

int baseline_vp8_encode(BaselineVP8Encoder *encoder, int32_t width, int32_t height,
                        const uint8_t *y, int32_t stride_y, const uint8_t *u, const uint8_t *v,
                        int32_t stride_uv, int32_t force_keyframe, uint8_t *output, size_t capacity,
                        size_t *byte_count, int32_t *is_keyframe) {
    if (width != encoder->width || height != encoder->height) return BaselineVP8InvalidInput;
    // VP8.Encoder.encode with a zero capture timestamp: one frame duration per frame.
    int64_t pts = encoder->last_pts < 0 ? 0 : encoder->last_pts + (int64_t)encoder->frame_duration_ticks;
    encoder->last_pts = pts;
    vpx_enc_frame_flags_t flags = force_keyframe ? VPX_EFLAG_FORCE_KF : 0;
    encoder->image.planes[0] = (unsigned char *)y;
    encoder->image.planes[1] = (unsigned char *)u;
    encoder->image.planes[2] = (unsigned char *)v;
    encoder->image.stride[0] = stride_y;
    encoder->image.stride[1] = stride_uv;
    encoder->image.stride[2] = stride_uv;
    vpx_codec_err_t status = vpx_codec_encode(&encoder->context, &encoder->image, pts,
                                              encoder->frame_duration_ticks, flags, VPX_DL_REALTIME);
    memset(encoder->image.planes, 0, sizeof encoder->image.planes);
    if (status != VPX_CODEC_OK) return (int)status;

    size_t offset = 0;
    int32_t key = 0;
    vpx_codec_iter_t iterator = NULL;
    const vpx_codec_cx_pkt_t *packet;
    while ((packet = vpx_codec_get_cx_data(&encoder->context, &iterator)) != NULL) {
        if (packet->kind != VPX_CODEC_CX_FRAME_PKT) continue;
        size_t size = packet->data.frame.sz;
        if (offset + size > capacity || output == NULL) return BaselineVP8BufferTooSmall;
        memcpy(output + offset, packet->data.frame.buf, size);
        offset += size;
        if (packet->data.frame.flags & VPX_FRAME_IS_KEY) key = 1;
    }
    *byte_count = offset;
    *is_keyframe = key;
    return BaselineVP8OK;
}

BaselineVP8Decoder *baseline_vp8_decoder_create(int32_t threads) {
    if (threads < 1 || threads > 16) return NULL;
    BaselineVP8Decoder *decoder = calloc(1, sizeof *decoder);
    if (decoder == NULL) return NULL;
    vpx_codec_dec_cfg_t cfg = {.threads = (unsigned int)threads, .w = 0, .h = 0};
    if (vpx_codec_dec_init(&decoder->context, vpx_codec_vp8_dx(), &cfg, 0) != VPX_CODEC_OK) {
        free(decoder);
        return NULL;
    }
    return decoder;
}

void baseline_vp8_decoder_destroy(BaselineVP8Decoder *decoder) {
    if (decoder == NULL) return;
    vpx_codec_destroy(&decoder->context);
    free(decoder);
}

int baseline_vp8_decode(BaselineVP8Decoder *decoder, const uint8_t *data, size_t length,
                        int32_t width, int32_t height, uint8_t *y, int32_t stride_y, uint8_t *u,
                        uint8_t *v, int32_t stride_uv) {
    if (data == NULL || length == 0) return BaselineVP8Corrupt;
    vpx_codec_err_t status = vpx_codec_decode(&decoder->context, data, (unsigned int)length, NULL, 0);
    if (status != VPX_CODEC_OK) return (int)status;
    int corrupted = 0;
    vpx_codec_err_t corrupt_status = vpx_codec_control_(&decoder->context, VP8D_GET_FRAME_CORRUPTED, &corrupted);
    vpx_codec_iter_t iterator = NULL;
    vpx_image_t *image = vpx_codec_get_frame(&decoder->context, &iterator);
    if (image == NULL) return 0;
    if (corrupt_status == VPX_CODEC_OK && corrupted != 0) return BaselineVP8Corrupt;
    if (image->fmt != VPX_IMG_FMT_I420 || image->d_w == 0 || image->d_h == 0) return BaselineVP8Unsupported;
    // VP8.Decoder reshapes its frame here; the baseline's caller sizes it up front.
    if ((int32_t)image->d_w != width || (int32_t)image->d_h != height) return BaselineVP8InvalidInput;
    I420Copy(image->planes[0], image->stride[0], image->planes[1], image->stride[1],
             image->planes[2], image->stride[2], y, stride_y, u, stride_uv, v, stride_uv,
             width, height);
    return 1;
}
