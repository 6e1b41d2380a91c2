// libavformat's Matroska/WebM muxer, for recordings (VP8 and Opus written as received).
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <errno.h>

// AVERROR is a function-like macro, which Swift does not import.
static inline int me_averror(int posixError) { return AVERROR(posixError); }
