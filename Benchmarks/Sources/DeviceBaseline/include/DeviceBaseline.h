// The libyuv and TurboJPEG calls V4L2FrameConverter makes for YUYV and 4:2:2 MJPEG
// camera frames, written in C, as the baseline the Swift converter is measured against;
// plus helpers that build the camera-format inputs from an I420 picture.
#ifndef DEVICE_BASELINE_H
#define DEVICE_BASELINE_H
#include <stddef.h>
#include <stdint.h>

/// Packs an I420 picture as YUYV (2 bytes per pixel, rows of 2 * width bytes).
void device_baseline_make_yuyv(const uint8_t *y, const uint8_t *u, const uint8_t *v, int width, int height,
                               uint8_t *out);

/// Compresses an I420 picture as a 4:2:2 JPEG of `quality`; returns its size (0 on failure)
/// and writes at most `capacity` bytes.
size_t device_baseline_make_mjpeg(const uint8_t *y, const uint8_t *u, const uint8_t *v, int width, int height,
                                  int quality, uint8_t *out, size_t capacity);

/// YUYV to I420 with libyuv, as the converter does.
int device_baseline_yuyv_to_i420(const uint8_t *yuyv, int width, int height, uint8_t *y, uint8_t *u, uint8_t *v);

typedef struct DeviceBaselineJPEG DeviceBaselineJPEG;

/// A decoder with its 4:2:2 chroma scratch planes allocated up front.
DeviceBaselineJPEG *device_baseline_jpeg_create(int width, int height);
void device_baseline_jpeg_destroy(DeviceBaselineJPEG *decoder);

/// Header, decode to YUV planes, then I422ToI420: the converter's path for 4:2:2 MJPEG.
int device_baseline_mjpeg_to_i420(DeviceBaselineJPEG *decoder, const uint8_t *jpeg, size_t size,
                                  uint8_t *y, uint8_t *u, uint8_t *v);

#endif
