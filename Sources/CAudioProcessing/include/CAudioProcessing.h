// A plain C face over libwebrtc-audio-processing 0.3 (C++): echo cancellation, noise
// suppression, gain control, the high-pass filter and the voice detector, on 10 ms blocks
// of interleaved 16-bit audio. The only file that knows the library: a later AEC3
// (webrtc-audio-processing 1.x) replaces AudioProcessing.cpp and keeps this header.
#ifndef MEDIAENGINE_CAUDIOPROCESSING_H
#define MEDIAENGINE_CAUDIOPROCESSING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct me_apm me_apm;

// What runs on the capture stream. The voice detector always runs.
typedef struct {
    int echo_cancellation;  // 0 or 1
    int noise_suppression;  // -1 off, 0 low, 1 moderate, 2 high, 3 very high
    int gain_control;       // 0 off, 1 adaptive digital
    int high_pass_filter;   // 0 or 1
} me_apm_settings;

typedef struct {
    // The echo canceller's figures in dB over the last period (average), and whether it
    // had any: ERL (far end to echo) and ERLE (echo to output).
    int echo_valid;
    float echo_return_loss;
    float echo_return_loss_enhancement;
    // The library's own estimate of the echo delay (median and spread, ms) and the
    // fraction of its estimates it judged poor; delay_valid is 0 before it has one.
    int delay_valid;
    int delay_median_ms;
    int delay_std_ms;
    float fraction_poor_delays;
} me_apm_metrics;

// Status codes: 0 is success; the library's own errors are negative (its
// AudioProcessing::Error); these are the shim's.
enum {
    ME_APM_OK = 0,
    ME_APM_NO_MEMORY = -1000,
    ME_APM_BAD_FORMAT = -1001,
};

// Makes a processor for `sample_rate` (8000, 16000, 32000 or 48000), with 1 or 2 channels
// captured and 1 or 2 played, with the extended filter and delay-agnostic echo
// cancellation. Returns a status; on success `*out` owns the processor. Render and
// capture calls may come from two threads (the library locks; each side has its own
// block buffer); settings change between blocks.
int me_apm_create(int sample_rate, int capture_channels, int render_channels, const me_apm_settings *settings,
                  me_apm **out);
void me_apm_destroy(me_apm *apm);

// Changes what runs, between blocks.
int me_apm_apply(me_apm *apm, const me_apm_settings *settings);

// One 10 ms block of what was played (the echo's reference): sample_rate / 100 frames.
int me_apm_process_render(me_apm *apm, const int16_t *samples);

// One 10 ms block of what was captured, processed in place. `delay_ms` is the time from
// a block's render call to the capture call of the block holding its echo, 0 to 500: the
// library clamps one outside that range, processes the block and returns
// me_apm_delay_warning(). `*has_voice` gets the voice detector's decision for the block.
int me_apm_process_capture(me_apm *apm, int16_t *samples, int delay_ms, int *has_voice);

// The latest figures.
int me_apm_read_metrics(me_apm *apm, me_apm_metrics *metrics);

// The library's warning for a delay out of range (kBadStreamParameterWarning).
int me_apm_delay_warning(void);

#ifdef __cplusplus
}
#endif

#endif
