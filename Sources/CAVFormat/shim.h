// libavformat's muxers (Matroska/WebM for recordings; FLV, MP4 and WebM for live pushes)
// and libavcodec's encoders for live pushes (libx264, aac, libvpx, libopus); libavutil's FFT
// (tx.h) for the simulated room's convolution.
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/tx.h>
#include <errno.h>

// AVERROR is a function-like macro, which Swift does not import.
static inline int me_averror(int posixError) { return AVERROR(posixError); }

// AVERROR_EOF and AVERROR_EXIT are built with FFERRTAG, a function-like macro.
static inline int me_averror_eof(void) { return AVERROR_EOF; }
static inline int me_averror_exit(void) { return AVERROR_EXIT; }
