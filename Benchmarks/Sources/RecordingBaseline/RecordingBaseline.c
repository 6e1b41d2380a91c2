#include "RecordingBaseline.h"

#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <stdlib.h>
#include <string.h>

struct RecordingBaseline {
    AVFormatContext *context;
    AVPacket *packet;
    int video;
    int audio;
};

static const int pre_skip = 312;

RecordingBaseline *recording_baseline_open(const char *path, int width, int height, int channels) {
    RecordingBaseline *baseline = calloc(1, sizeof *baseline);
    if (!baseline) return NULL;
    if (avformat_alloc_output_context2(&baseline->context, NULL, "webm", path) < 0) goto fail;
    AVFormatContext *context = baseline->context;
    if (avio_open(&context->pb, path, AVIO_FLAG_WRITE) < 0) goto fail;
    baseline->packet = av_packet_alloc();
    context->max_interleave_delta = 500000;
    context->flush_packets = 1;

    AVStream *video = avformat_new_stream(context, NULL);
    video->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
    video->codecpar->codec_id = AV_CODEC_ID_VP8;
    video->codecpar->width = width;
    video->codecpar->height = height;
    video->time_base = (AVRational){1, 1000};
    baseline->video = video->index;

    AVStream *audio = avformat_new_stream(context, NULL);
    audio->codecpar->codec_type = AVMEDIA_TYPE_AUDIO;
    audio->codecpar->codec_id = AV_CODEC_ID_OPUS;
    audio->codecpar->sample_rate = 48000;
    av_channel_layout_default(&audio->codecpar->ch_layout, channels);
    audio->codecpar->initial_padding = pre_skip;
    uint8_t head[19] = {'O', 'p', 'u', 's', 'H', 'e', 'a', 'd', 1, (uint8_t)channels, pre_skip & 0xFF, pre_skip >> 8,
                        0x80, 0xBB, 0, 0, 0, 0, 0};
    audio->codecpar->extradata = av_mallocz(sizeof head + AV_INPUT_BUFFER_PADDING_SIZE);
    memcpy(audio->codecpar->extradata, head, sizeof head);
    audio->codecpar->extradata_size = sizeof head;
    audio->time_base = (AVRational){1, 1000};
    baseline->audio = audio->index;

    AVDictionary *options = NULL;
    av_dict_set(&options, "cluster_time_limit", "1000", 0);
    av_dict_set(&options, "cluster_size_limit", "2097152", 0);
    int status = avformat_write_header(context, &options);
    av_dict_free(&options);
    if (status < 0) goto fail;
    avio_flush(context->pb);
    return baseline;
fail:
    if (baseline->context) {
        if (baseline->context->pb) avio_closep(&baseline->context->pb);
        avformat_free_context(baseline->context);
    }
    av_packet_free(&baseline->packet);
    free(baseline);
    return NULL;
}

static int64_t scaled(AVStream *stream, int64_t milliseconds) {
    return milliseconds * stream->time_base.den / (1000 * (int64_t)stream->time_base.num);
}

int recording_baseline_write(RecordingBaseline *baseline, int track, const uint8_t *data, size_t size,
                             int64_t milliseconds, int64_t duration, int keyframe) {
    AVFormatContext *context = baseline->context;
    int index = track == 0 ? baseline->video : baseline->audio;
    AVStream *stream = context->streams[index];
    AVPacket *packet = baseline->packet;
    packet->data = (uint8_t *)data;
    packet->size = (int)size;
    packet->pts = packet->dts = scaled(stream, milliseconds);
    packet->duration = scaled(stream, duration);
    packet->stream_index = index;
    packet->flags = keyframe || track == 1 ? AV_PKT_FLAG_KEY : 0;
    int status = av_interleaved_write_frame(context, packet);
    avio_flush(context->pb);
    return status < 0 ? status : context->pb->error;
}

int recording_baseline_close(RecordingBaseline *baseline) {
    int status = av_write_trailer(baseline->context);
    avio_closep(&baseline->context->pb);
    avformat_free_context(baseline->context);
    av_packet_free(&baseline->packet);
    free(baseline);
    return status;
}
