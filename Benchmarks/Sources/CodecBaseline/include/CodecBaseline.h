// The libopus, libvpx and libyuv calls that MediaEngine's Swift codec wrappers make,
// written directly in C: the baseline the wrappers are benchmarked against.
//
// Each function configures and calls the library exactly as the matching Swift type
// does (Opus.Encoder, Opus.Decoder, VP8.Encoder, VP8.Decoder); see the comments in
// CodecBaseline.c for the Swift line each part mirrors. Handles are opaque and owned by
// the caller, who frees them with the matching destroy function. Not thread-safe: one
// caller per handle.
#ifndef CODEC_BASELINE_H
#define CODEC_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: Opus

/// libopus applications, by the names Opus.Application uses.
typedef enum {
    BaselineOpusApplicationVoIP = 0,
    BaselineOpusApplicationAudio = 1,
    BaselineOpusApplicationRestrictedLowDelay = 2,
} BaselineOpusApplication;

typedef struct BaselineOpusEncoder BaselineOpusEncoder;
typedef struct BaselineOpusDecoder BaselineOpusDecoder;

/// Creates an encoder with the ctls Opus.Encoder.init sets, in the same order.
/// Returns NULL when libopus refuses a value.
BaselineOpusEncoder *baseline_opus_encoder_create(int32_t sample_rate, int32_t channels,
                                                  BaselineOpusApplication application, int32_t bitrate,
                                                  int32_t complexity, int32_t inband_fec,
                                                  int32_t packet_loss_percent, int32_t dtx, int32_t vbr,
                                                  int32_t samples_per_frame);
void baseline_opus_encoder_destroy(BaselineOpusEncoder *encoder);

/// Encodes one frame of `sample_count` interleaved samples into `output`.
/// Returns the packet length, or a negative libopus status.
int32_t baseline_opus_encode(BaselineOpusEncoder *encoder, const int16_t *pcm, size_t sample_count,
                             uint8_t *output, size_t capacity);

BaselineOpusDecoder *baseline_opus_decoder_create(int32_t sample_rate, int32_t channels);
void baseline_opus_decoder_destroy(BaselineOpusDecoder *decoder);

/// Decodes `packet` into `pcm` (room for `capacity` interleaved samples).
/// Returns samples per channel written, or a negative libopus status.
int32_t baseline_opus_decode(BaselineOpusDecoder *decoder, const uint8_t *packet, size_t length,
                             int16_t *pcm, size_t capacity);

// MARK: VP8

typedef struct BaselineVP8Encoder BaselineVP8Encoder;
typedef struct BaselineVP8Decoder BaselineVP8Decoder;

/// Status codes of the VP8 functions besides libvpx's own (which are positive).
enum {
    BaselineVP8OK = 0,
    BaselineVP8InvalidInput = -1,
    BaselineVP8BufferTooSmall = -2,
    BaselineVP8Unsupported = -3,
    BaselineVP8Corrupt = -4,
};

/// Creates a realtime encoder with the vpx_codec_enc_cfg_t fields and controls that
/// VP8.Encoder.open() sets. Returns NULL when libvpx refuses the settings.
BaselineVP8Encoder *baseline_vp8_encoder_create(int32_t width, int32_t height, int32_t bitrate,
                                                int32_t frame_rate, int32_t cpu_used, int32_t threads,
                                                int32_t keyframe_interval, int32_t error_resilient,
                                                int32_t allows_frame_drops);
void baseline_vp8_encoder_destroy(BaselineVP8Encoder *encoder);

/// Encodes one I420 frame, timestamped one frame duration after the previous one, and
/// copies every compressed packet into `output` back to back.
/// Returns BaselineVP8OK with `*byte_count` (0 when rate control dropped the frame) and
/// `*is_keyframe` set, a negative Baseline status, or a positive vpx_codec_err_t.
int baseline_vp8_encode(BaselineVP8Encoder *encoder, int32_t width, int32_t height,
                        const uint8_t *y, int32_t stride_y, const uint8_t *u, const uint8_t *v,
                        int32_t stride_uv, int32_t force_keyframe, uint8_t *output, size_t capacity,
                        size_t *byte_count, int32_t *is_keyframe);

BaselineVP8Decoder *baseline_vp8_decoder_create(int32_t threads);
void baseline_vp8_decoder_destroy(BaselineVP8Decoder *decoder);

/// Decodes one compressed frame and copies the picture into the caller's I420 planes
/// with libyuv's I420Copy, which must be `width` x `height`.
/// Returns 1 when a picture was written, 0 when the data held none, a negative Baseline
/// status, or a positive vpx_codec_err_t.
int baseline_vp8_decode(BaselineVP8Decoder *decoder, const uint8_t *data, size_t length,
                        int32_t width, int32_t height, uint8_t *y, int32_t stride_y, uint8_t *u,
                        uint8_t *v, int32_t stride_uv);

#ifdef __cplusplus
}
#endif

#endif
