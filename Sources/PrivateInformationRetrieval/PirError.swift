import HomomorphicEncryption

/// Everything that can go wrong in PIR; each case names the culprit and what was expected.
public enum PirError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidParameters(String)
    case indexOutOfRange(index: Int, entryCount: Int)
    case entryTooLarge(index: Int, size: Int, maximum: Int)
    case wrongQueryShape(got: Int, expected: Int)
    case wrongResponseShape(got: Int, expected: Int)
    case cuckooInsertionFailed(keywords: Int, buckets: Int)
    case duplicateKeyword(String)
    case valueTooLarge(keyword: String, size: Int, maximum: Int)
    case homomorphic(HomomorphicEncryptionError)
    case malformedBucket(String)

    public var description: String {
        switch self {
        case let .invalidParameters(reason): "invalid PIR parameters: \(reason)"
        case let .indexOutOfRange(index, count): "index \(index) is outside the database of \(count) entries"
        case let .entryTooLarge(index, size, maximum): "entry \(index) has \(size) bytes, more than the \(maximum) the database holds"
        case let .wrongQueryShape(got, expected): "query has \(got) ciphertexts, expected \(expected)"
        case let .wrongResponseShape(got, expected): "response has \(got) ciphertexts, expected \(expected)"
        case let .cuckooInsertionFailed(keywords, buckets): "could not place \(keywords) keywords in \(buckets) buckets"
        case let .duplicateKeyword(keyword): "keyword '\(keyword)' appears twice"
        case let .valueTooLarge(keyword, size, maximum): "value of '\(keyword)' has \(size) bytes, more than \(maximum)"
        case let .homomorphic(error): error.description
        case let .malformedBucket(reason): "malformed bucket in the response: \(reason)"
        }
    }
}

/// Runs an HE operation, mapping its error into `PirError`.
@inline(__always)
func he<T>(_ body: () throws(HomomorphicEncryptionError) -> T) throws(PirError) -> T {
    do { return try body() } catch { throw .homomorphic(error) }
}
