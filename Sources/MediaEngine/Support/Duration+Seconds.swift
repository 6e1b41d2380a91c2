extension Duration {
    /// The duration in seconds as a Double: for the package's figures and estimators.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
