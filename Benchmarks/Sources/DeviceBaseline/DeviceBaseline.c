// Mirrors Sources/MediaEngine/Devices/V4L2/V4L2FrameConverter.swift call for call for
// the two formats measured (YUYV, 4:2:2 MJPEG), so a difference is the wrapper's cost.
#include "DeviceBaseline.h"

#include <stdlib.h>
#include <string.h>

#include <libyuv.h>
#include <turbojpeg.h>

void device_baseline_make_yuyv(const uint8_t *y, const uint8_t *u, const uint8_t *v, int width, int height,
                               uint8_t *out) {
    I420ToYUY2(y, width, u, (width + 1) / 2, v, (width + 1) / 2, out, width * 2, width, height);
}

size_t device_baseline_make_mjpeg(const uint8_t *y, const uint8_t *u, const uint8_t *v, int width, int height,
                                  int quality, uint8_t *out, size_t capacity) {
    int chromaWidth = (width + 1) / 2;
    uint8_t *u422 = malloc((size_t)chromaWidth * height);
    uint8_t *v422 = malloc((size_t)chromaWidth * height);
    tjhandle encoder = tjInitCompress();
    size_t result = 0;
    if (u422 && v422 && encoder) {
        I420ToI422(y, width, u, chromaWidth, v, chromaWidth, NULL, 0, u422, chromaWidth, v422, chromaWidth, width, height);
        const unsigned char *planes[3] = {y, u422, v422};
        int strides[3] = {width, chromaWidth, chromaWidth};
        unsigned char *jpeg = out;
        unsigned long size = capacity;
        if (tjCompressFromYUVPlanes(encoder, planes, width, strides, height, TJSAMP_422, &jpeg, &size, quality,
                                    TJFLAG_NOREALLOC) == 0) {
            result = size;
        }
    }
    if (encoder) tjDestroy(encoder);
    free(u422);
    free(v422);
    return result;
}

int device_baseline_yuyv_to_i420(const uint8_t *yuyv, int width, int height, uint8_t *y, uint8_t *u, uint8_t *v) {
    int chromaWidth = (width + 1) / 2;
    return YUY2ToI420(yuyv, width * 2, y, width, u, chromaWidth, v, chromaWidth, width, height);
}

struct DeviceBaselineJPEG {
    tjhandle handle;
    uint8_t *scratch;
    int width;
    int height;
};

DeviceBaselineJPEG *device_baseline_jpeg_create(int width, int height) {
    DeviceBaselineJPEG *decoder = calloc(1, sizeof *decoder);
    if (!decoder) return NULL;
    decoder->handle = tjInitDecompress();
    // Sized for 4:4:4, as the converter sizes its scratch planes.
    size_t plane = (size_t)tjPlaneWidth(1, width, TJSAMP_444) * (size_t)tjPlaneHeight(1, height, TJSAMP_444);
    decoder->scratch = malloc(2 * plane);
    decoder->width = width;
    decoder->height = height;
    if (!decoder->handle || !decoder->scratch) {
        device_baseline_jpeg_destroy(decoder);
        return NULL;
    }
    return decoder;
}

void device_baseline_jpeg_destroy(DeviceBaselineJPEG *decoder) {
    if (!decoder) return;
    if (decoder->handle) tjDestroy(decoder->handle);
    free(decoder->scratch);
    free(decoder);
}

int device_baseline_mjpeg_to_i420(DeviceBaselineJPEG *decoder, const uint8_t *jpeg, size_t size,
                                  uint8_t *y, uint8_t *u, uint8_t *v) {
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    if (tjDecompressHeader3(decoder->handle, jpeg, size, &width, &height, &subsampling, &colorspace) != 0) return -1;
    if (width != decoder->width || height != decoder->height || subsampling != TJSAMP_422) return -1;
    int sourceWidth = tjPlaneWidth(1, width, subsampling);
    int sourceHeight = tjPlaneHeight(1, height, subsampling);
    uint8_t *scratchU = decoder->scratch;
    uint8_t *scratchV = scratchU + (size_t)sourceWidth * sourceHeight;
    unsigned char *planes[3] = {y, scratchU, scratchV};
    int strides[3] = {width, sourceWidth, sourceWidth};
    if (tjDecompressToYUVPlanes(decoder->handle, jpeg, size, planes, width, strides, height, 0) != 0
        && tjGetErrorCode(decoder->handle) != TJERR_WARNING) {
        return -1;
    }
    int chromaWidth = (width + 1) / 2;
    return I422ToI420(NULL, 0, scratchU, sourceWidth, scratchV, sourceWidth, NULL, 0, u, chromaWidth, v, chromaWidth,
                      width, height);
}
