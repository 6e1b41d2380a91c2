// The libavformat calls WebMMuxer makes, written in C, as the baseline the Swift muxer is
// measured against: the same muxer ("webm"), options, stream parameters and packets.
#ifndef RECORDING_BASELINE_H
#define RECORDING_BASELINE_H
#include <stddef.h>
#include <stdint.h>

typedef struct RecordingBaseline RecordingBaseline;

/// Creates `path` and writes the header: a VP8 track of width x height and an Opus track
/// of `channels` (48 kHz, pre-skip 312). NULL on failure.
RecordingBaseline *recording_baseline_open(const char *path, int width, int height, int channels);

/// Writes one packet (track 0: video, 1: audio) at `milliseconds`; 0 or an AVERROR.
int recording_baseline_write(RecordingBaseline *baseline, int track, const uint8_t *data, size_t size,
                             int64_t milliseconds, int64_t duration, int keyframe);

/// Writes the trailer and closes the file; 0 or an AVERROR.
int recording_baseline_close(RecordingBaseline *baseline);

#endif
