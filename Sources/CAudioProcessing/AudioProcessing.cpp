// libwebrtc-audio-processing 0.3 behind the C header (see CAudioProcessing.h).
#include "CAudioProcessing.h"

#include <new>
#include <cstring>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

struct me_apm {
    webrtc::AudioProcessing *processor;
    webrtc::AudioFrame capture;
    webrtc::AudioFrame render;
    int sample_rate;
    int capture_channels;
    int render_channels;
};

namespace {

int configure(webrtc::AudioProcessing *processor, const me_apm_settings *settings) {
    int status;
    auto *echo = processor->echo_cancellation();
    if ((status = echo->Enable(settings->echo_cancellation != 0)) != 0) return status;
    if (settings->echo_cancellation) {
        if ((status = echo->set_suppression_level(webrtc::EchoCancellation::kHighSuppression)) != 0) return status;
        if ((status = echo->enable_metrics(true)) != 0) return status;
        if ((status = echo->enable_delay_logging(true)) != 0) return status;
        if ((status = echo->enable_drift_compensation(false)) != 0) return status;
    }
    auto *noise = processor->noise_suppression();
    if (settings->noise_suppression >= 0) {
        static const webrtc::NoiseSuppression::Level levels[] = {
            webrtc::NoiseSuppression::kLow, webrtc::NoiseSuppression::kModerate,
            webrtc::NoiseSuppression::kHigh, webrtc::NoiseSuppression::kVeryHigh,
        };
        int level = settings->noise_suppression > 3 ? 3 : settings->noise_suppression;
        if ((status = noise->set_level(levels[level])) != 0) return status;
    }
    if ((status = noise->Enable(settings->noise_suppression >= 0)) != 0) return status;
    auto *gain = processor->gain_control();
    if (settings->gain_control) {
        if ((status = gain->set_mode(webrtc::GainControl::kAdaptiveDigital)) != 0) return status;
        if ((status = gain->set_target_level_dbfs(3)) != 0) return status;
        if ((status = gain->set_compression_gain_db(9)) != 0) return status;
        if ((status = gain->enable_limiter(true)) != 0) return status;
    }
    if ((status = gain->Enable(settings->gain_control != 0)) != 0) return status;
    if ((status = processor->high_pass_filter()->Enable(settings->high_pass_filter != 0)) != 0) return status;
    auto *voice = processor->voice_detection();
    if ((status = voice->set_likelihood(webrtc::VoiceDetection::kLowLikelihood)) != 0) return status;
    if ((status = voice->set_frame_size_ms(10)) != 0) return status;
    return voice->Enable(true);
}

void fill(webrtc::AudioFrame &frame, int sample_rate, int channels, const int16_t *samples) {
    frame.sample_rate_hz_ = sample_rate;
    frame.num_channels_ = channels;
    frame.samples_per_channel_ = sample_rate / 100;
    std::memcpy(frame.data_, samples, sizeof(int16_t) * frame.samples_per_channel_ * channels);
}

}  // namespace

extern "C" int me_apm_create(int sample_rate, int capture_channels, int render_channels, const me_apm_settings *settings,
                             me_apm **out) {
    *out = nullptr;
    // The library checks the rate (kBadSampleRateError); the blocks here hold at most two
    // channels of 48 kHz.
    if (capture_channels < 1 || capture_channels > 2 || render_channels < 1 || render_channels > 2 || sample_rate > 48000) {
        return ME_APM_BAD_FORMAT;
    }
    webrtc::Config config;
    // The extended filter covers longer rooms and is what libwebrtc runs; delay-agnostic
    // mode finds the echo when the reported delay is wrong (devices whose delays lie).
    config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
    config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(true));
    auto *processor = webrtc::AudioProcessing::Create(config);
    if (processor == nullptr) return ME_APM_NO_MEMORY;
    auto layout = [](int channels) {
        return channels == 1 ? webrtc::AudioProcessing::kMono : webrtc::AudioProcessing::kStereo;
    };
    int status = processor->Initialize(sample_rate, sample_rate, sample_rate, layout(capture_channels),
                                       layout(capture_channels), layout(render_channels));
    if (status == 0) status = configure(processor, settings);
    if (status != 0) {
        delete processor;
        return status;
    }
    auto *apm = new (std::nothrow) me_apm();
    if (apm == nullptr) {
        delete processor;
        return ME_APM_NO_MEMORY;
    }
    apm->processor = processor;
    apm->sample_rate = sample_rate;
    apm->capture_channels = capture_channels;
    apm->render_channels = render_channels;
    *out = apm;
    return ME_APM_OK;
}

extern "C" void me_apm_destroy(me_apm *apm) {
    if (apm == nullptr) return;
    delete apm->processor;
    delete apm;
}

extern "C" int me_apm_apply(me_apm *apm, const me_apm_settings *settings) {
    return configure(apm->processor, settings);
}

extern "C" int me_apm_process_render(me_apm *apm, const int16_t *samples) {
    fill(apm->render, apm->sample_rate, apm->render_channels, samples);
    return apm->processor->ProcessReverseStream(&apm->render);
}

extern "C" int me_apm_process_capture(me_apm *apm, int16_t *samples, int delay_ms, int *has_voice) {
    fill(apm->capture, apm->sample_rate, apm->capture_channels, samples);
    int warning = 0;
    if (apm->processor->echo_cancellation()->is_enabled()) {
        warning = apm->processor->set_stream_delay_ms(delay_ms);
    }
    if (apm->processor->gain_control()->is_enabled()) {
        // Adaptive digital gain ignores the analog level, but the library wants one each block.
        apm->processor->gain_control()->set_stream_analog_level(0);
    }
    int status = apm->processor->ProcessStream(&apm->capture);
    *has_voice = status == 0 && apm->processor->voice_detection()->stream_has_voice() ? 1 : 0;
    if (status != 0) return status;
    std::memcpy(samples, apm->capture.data_, sizeof(int16_t) * apm->capture.samples_per_channel_ * apm->capture_channels);
    return warning;
}

extern "C" int me_apm_read_metrics(me_apm *apm, me_apm_metrics *metrics) {
    std::memset(metrics, 0, sizeof *metrics);
    auto *echo = apm->processor->echo_cancellation();
    if (!echo->is_enabled()) return ME_APM_OK;
    webrtc::EchoCancellation::Metrics figures;
    // The library reports -100 dB (its offset level) before it has measured anything,
    // as when nothing was played: no figure.
    if (echo->GetMetrics(&figures) == 0 && figures.echo_return_loss.average > -100 &&
        figures.echo_return_loss_enhancement.average > -100) {
        metrics->echo_valid = 1;
        metrics->echo_return_loss = figures.echo_return_loss.average;
        metrics->echo_return_loss_enhancement = figures.echo_return_loss_enhancement.average;
    }
    int median = 0, spread = 0;
    float poor = 0;
    if (echo->GetDelayMetrics(&median, &spread, &poor) == 0 && median >= 0) {
        metrics->delay_valid = 1;
        metrics->delay_median_ms = median;
        metrics->delay_std_ms = spread;
        metrics->fraction_poor_delays = poor;
    }
    return ME_APM_OK;
}

extern "C" int me_apm_delay_warning(void) { return webrtc::AudioProcessing::kBadStreamParameterWarning; }
