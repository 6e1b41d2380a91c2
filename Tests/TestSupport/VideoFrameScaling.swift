import MediaEngine

extension VideoFrame {
    /// This picture at `other`'s size (itself when they match): a source compared with a
    /// simulcast layer's decoded picture.
    public func scaled(toMatch other: VideoFrame) -> VideoFrame {
        guard width != other.width || height != other.height else { return self }
        var target = VideoFrame(width: other.width, height: other.height)
        scale(into: &target)
        return target
    }
}
