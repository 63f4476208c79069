import NetExtHTTP

/// When a background task tries again: after failures the network may cure (no connection, a
/// timeout, a connection cut mid-answer), with doubling waits from `firstDelay` up to
/// `maximumDelay` — cut short by a network change — until the task's
/// `timeoutIntervalForResource` has passed since it was made. Failures that another attempt
/// would repeat (ATS, the URL filter, a certificate, a bad URL) end the task at once.
struct TransferRetryPolicy: Sendable {
    var firstDelay: Double = 1
    var maximumDelay: Double = 30

    /// Seconds to wait after the `failures`-th failure in a row (1-based).
    func delay(afterFailures failures: Int) -> Double {
        guard failures > 1 else { return firstDelay }
        let doubled = firstDelay * Double(1 << min(failures - 1, 20))
        return min(maximumDelay, doubled)
    }

    /// Whether another attempt could succeed.
    static func isRetryable(_ error: HTTPLoadError) -> Bool {
        switch error {
        case .cannotConnect, .timedOut, .interrupted, .badServerResponse: true
        case .invalidURL, .invalidConfiguration, .refused, .tlsFailed, .tooManyRedirects, .responseTooLarge, .deniedByURLFilter, .cancelled,
            .transferServiceUnavailable, .transferRefused, .transferFailed:
            false
        }
    }
}
