/// The header the kernel puts before every packet on a TUN descriptor opened with
/// `IFF_VNET_HDR` (struct virtio_net_hdr, include/uapi/linux/virtio_net.h; Virtio 1.2 §5.1.6),
/// 10 bytes in the machine's byte order. It says whether the packet is a TCP/UDP segmentation
/// offload "super-packet" and where its checksum still has to be completed.
public struct VirtioNetHeader: Sendable, Hashable {
    public static let size = 10

    /// flags: the checksum from `checksumStart` to the end must be completed
    /// (VIRTIO_NET_HDR_F_NEEDS_CSUM).
    public static let needsChecksum: UInt8 = 1
    /// gso_type values.
    public static let gsoNone: UInt8 = 0
    public static let gsoTCPv4: UInt8 = 1
    public static let gsoUDP: UInt8 = 3
    public static let gsoTCPv6: UInt8 = 4
    public static let gsoUDPL4: UInt8 = 5
    public static let gsoECN: UInt8 = 0x80

    public var flags: UInt8 = 0
    public var gsoType: UInt8 = 0
    public var headerLength: UInt16 = 0
    public var gsoSize: UInt16 = 0
    public var checksumStart: UInt16 = 0
    public var checksumOffset: UInt16 = 0

    public init() {}

    public init(flags: UInt8, gsoType: UInt8, headerLength: UInt16, gsoSize: UInt16, checksumStart: UInt16, checksumOffset: UInt16) {
        self.flags = flags
        self.gsoType = gsoType
        self.headerLength = headerLength
        self.gsoSize = gsoSize
        self.checksumStart = checksumStart
        self.checksumOffset = checksumOffset
    }

    /// Reads the header at `bytes` (at least `size` bytes).
    @inlinable
    public init(reading bytes: UnsafeRawPointer) {
        flags = bytes.load(fromByteOffset: 0, as: UInt8.self)
        gsoType = bytes.load(fromByteOffset: 1, as: UInt8.self)
        headerLength = bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
        gsoSize = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self)
        checksumStart = bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)
        checksumOffset = bytes.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
    }

    /// Writes the header at `bytes` (room for `size` bytes).
    @inlinable
    public func write(to bytes: UnsafeMutableRawPointer) {
        bytes.storeBytes(of: flags, toByteOffset: 0, as: UInt8.self)
        bytes.storeBytes(of: gsoType, toByteOffset: 1, as: UInt8.self)
        bytes.storeBytes(of: headerLength, toByteOffset: 2, as: UInt16.self)
        bytes.storeBytes(of: gsoSize, toByteOffset: 4, as: UInt16.self)
        bytes.storeBytes(of: checksumStart, toByteOffset: 6, as: UInt16.self)
        bytes.storeBytes(of: checksumOffset, toByteOffset: 8, as: UInt16.self)
    }
}

/// Why a packet from a TUN descriptor with offloads could not be turned into packets.
public enum PacketOffloadError: Error, Sendable, Hashable, CustomStringConvertible {
    case truncated(length: Int)
    case unsupportedSegmentation(gsoType: UInt8)
    case inconsistentHeader(String)

    public var description: String {
        switch self {
        case .truncated(let length): "a packet of \(length) bytes is shorter than its headers"
        case .unsupportedSegmentation(let type): "segmentation type \(type) is not supported"
        case .inconsistentHeader(let detail): "the offload header does not fit the packet: \(detail)"
        }
    }
}
