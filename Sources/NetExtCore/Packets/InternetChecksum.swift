/// The Internet checksum (RFC 1071): the 16-bit one's-complement of the one's-complement sum.
///
/// Sums are kept in the machine's byte order over whole 64-bit words (RFC 1071 §2(B): the sum
/// does not depend on byte order, and §2(C): it can be accumulated in wider words and folded).
/// A folded result stored back into memory without conversion is therefore correct on the
/// wire. Every region summed must start at an even offset of the checksummed data.
public enum InternetChecksum {
    /// Adds `count` bytes at `bytes` to `initial`.
    @inlinable
    public static func sum(_ bytes: UnsafeRawPointer, count: Int, initial: UInt64 = 0) -> UInt64 {
        var total = initial
        var offset = 0
        @inline(__always) func add(_ value: UInt64) {
            let (result, overflow) = total.addingReportingOverflow(value)
            total = result &+ (overflow ? 1 : 0)
        }
        while offset + 32 <= count {
            add(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            add(bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            add(bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
            add(bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))
            offset += 32
        }
        while offset + 8 <= count {
            add(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < count {
            // Little-endian machines: byte k of a word is bits 8k..8k+7.
            tail |= UInt64(bytes.load(fromByteOffset: offset, as: UInt8.self)) << shift
            shift += 8
            offset += 1
        }
        add(tail)
        return total
    }

    /// Folds a running sum to 16 bits (still in machine byte order, not complemented).
    @inlinable
    public static func fold(_ sum: UInt64) -> UInt16 {
        var value = (sum & 0xffff_ffff) + (sum >> 32)
        value = (value & 0xffff_ffff) + (value >> 32)
        value = (value & 0xffff) + (value >> 16)
        value = (value & 0xffff) + (value >> 16)
        return UInt16(truncatingIfNeeded: value)
    }

    /// The TCP/UDP pseudo-header sum (RFC 793 §3.1, RFC 8200 §8.1): both addresses, the protocol
    /// and the upper-layer length.
    @inlinable
    public static func pseudoHeaderSum(addresses: UnsafeRawPointer, addressBytes: Int, protocolNumber: UInt8, length: Int) -> UInt64 {
        var total = sum(addresses, count: addressBytes)
        let extra = UInt64(UInt16(protocolNumber).bigEndian) + UInt64(UInt16(truncatingIfNeeded: length).bigEndian) + UInt64(UInt16(truncatingIfNeeded: length >> 16).bigEndian) << 16
        let (result, overflow) = total.addingReportingOverflow(extra)
        total = result &+ (overflow ? 1 : 0)
        return total
    }

    /// Stores the checksum of a running sum (its complement) at `offset` of `bytes`.
    @inlinable
    public static func store(_ sum: UInt64, into bytes: UnsafeMutableRawPointer, at offset: Int, zeroAsAllOnes: Bool = false) {
        var value = ~fold(sum)
        if zeroAsAllOnes && value == 0 { value = 0xffff }  // UDP: 0 means "no checksum" (RFC 768)
        bytes.storeBytes(of: value, toByteOffset: offset, as: UInt16.self)
    }
}
