import CALSA
import COpus
import CSRTP
import CV4L2
import CVpx
import Testing
import Glibc

/// The shims wrap macros and variadic calls; these tests pin their values against the
/// kernel ABI and the libraries, so a wrong wrapper fails here and not in a device.
@Suite struct Shims {
    @Test func v4l2RequestCodesMatchTheKernelABI() {
        // _IOR('V', 0, struct v4l2_capability) with a 104-byte struct.
        #expect(CV4L2_VIDIOC_QUERYCAP == 0x8068_5600)
        #expect(CV4L2_VIDIOC_STREAMON == 0x4004_5612)
        #expect(CV4L2_VIDIOC_DQBUF == 0xC058_5611)
        #expect(CV4L2_PIX_FMT_YUYV == 0x5659_5559)  // 'YUYV' little-endian
        #expect(CV4L2_PIX_FMT_MJPEG == 0x4750_4A4D)  // 'MJPG'
        #expect(CV4L2_PIX_FMT_NV12 == 0x3231_564E)  // 'NV12'
    }

    @Test func v4l2OpenOfAMissingDeviceFailsWithErrno() {
        let fd = CV4L2_open("/dev/video-does-not-exist", O_RDWR)
        #expect(fd == -1)
        #expect(errno == ENOENT)
    }

    @Test func srtpPolicyMacroSelectsAES128WithAn80BitTag() {
        var policy = srtp_crypto_policy_t()
        CSRTP_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy)
        #expect(policy.cipher_type == 1)  // SRTP_AES_ICM_128 in crypto_types.h
        #expect(policy.cipher_key_len == 30)
        #expect(policy.auth_tag_len == 10)
        #expect(String(cString: srtp_get_version_string()).hasPrefix("libsrtp2 2."))
    }

    @Test func opusControlRequestsRoundTrip() throws {
        var status: Int32 = 0
        let encoder = try #require(opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &status))
        defer { opus_encoder_destroy(encoder) }
        #expect(COpus_encoder_set_bitrate(encoder, 24_000) == OPUS_OK)
        var value: Int32 = 0
        #expect(COpus_encoder_get_bitrate(encoder, &value) == OPUS_OK)
        #expect(value == 24_000)
        #expect(COpus_encoder_set_complexity(encoder, 42) == OPUS_BAD_ARG)
    }

    @Test func vpxInitMacrosAndControlWork() {
        let context = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        defer { context.deallocate() }
        var settings = vpx_codec_dec_cfg_t(threads: 1, w: 0, h: 0)
        #expect(CVpx_codec_dec_init(context, vpx_codec_vp8_dx(), &settings, 0) == VPX_CODEC_OK)
        var corrupted: Int32 = -1
        #expect(CVpx_codec_control_int_pointer(context, Int32(VP8D_GET_FRAME_CORRUPTED.rawValue), &corrupted) == VPX_CODEC_OK
            || corrupted == -1)
        vpx_codec_destroy(context)
    }

    @Test func alsaLibraryLinks() {
        #expect(String(cString: snd_asoundlib_version()).hasPrefix("1."))
    }
}
